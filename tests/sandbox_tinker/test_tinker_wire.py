"""The sandbox's hand-written protobuf messages and its tokenizer agree with the `tinker`
SDK's own generated code and with `transformers`, which are used here as oracles."""

from __future__ import annotations

import json
import math
import struct
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from fixtures.tinker import TINKER_KEY
from tinker.proto import tinker_public_pb2 as public_pb
from tinker.proto.response_conv import (
    deserialize_forward_backward_output,
    deserialize_sample_response,
)
from transformers import AutoTokenizer

from labmgr.sandbox import SandboxHandle
from labmgr.sandbox.tinker import SPECIAL_TOKENS, decode, encode, render_chat, write_tokenizer
from labmgr.sandbox.tinker.wire import (
    decode_forward_backward,
    encode_forward_backward_output,
    encode_sample_response,
)


def _tensor(values: list[float], dtype: int, fmt: str) -> public_pb.Tensor:
    data = struct.pack(f"<{len(values)}{fmt}", *values)
    return public_pb.Tensor(dense=data, dtype=dtype, shape=[len(values)])


def test_forward_backward_request_decodes_as_the_sdk_encodes_it() -> None:
    message = public_pb.ForwardBackwardRequest(model_id="s:train:0", seq_id=300, loss_fn="ce")
    message.forward_only = True
    message.loss_fn_config["clip"] = 0.2
    datum = message.data.add()
    for tokens in ([1, 2, 300], [70_000]):  # a model input of two chunks
        datum.model_input.add().encoded_text.tokens = b"".join(
            t.to_bytes(4, "little") for t in tokens
        )
    datum.loss_fn_inputs["target_tokens"].CopyFrom(_tensor([2, 300, 70_000, 9], 2, "q"))
    datum.loss_fn_inputs["weights"].CopyFrom(_tensor([0.0, 1.0, 0.5, 1.0], 1, "f"))
    message.data.add()  # an empty datum
    decoded = decode_forward_backward(message.SerializeToString())
    assert (decoded.model_id, decoded.seq_id, decoded.loss_fn) == ("s:train:0", 300, "ce")
    assert decoded.forward_only
    assert decoded.data[0].tokens == (1, 2, 300, 70_000)
    assert decoded.data[0].inputs == {
        "target_tokens": (2, 300, 70_000, 9),
        "weights": (0.0, 1.0, 0.5, 1.0),
    }
    assert decoded.data[1].tokens == () and decoded.data[1].inputs == {}


def test_forward_backward_output_is_read_by_the_sdk() -> None:
    rows = [[-0.5, -1.25], [], [-2.0]]
    output = deserialize_forward_backward_output(
        encode_forward_backward_output(rows, {"loss:sum": 3.75})
    )
    assert output.metrics == {"loss:sum": 3.75}
    assert [out["logprobs"].tolist() for out in output.loss_fn_outputs] == rows


def test_sample_response_is_read_by_the_sdk() -> None:
    body = encode_sample_response(
        [(False, [72, 105, 258], [-0.1, -0.2, -0.3]), (True, [1], [-1.0])],
        [math.nan, -1.5],
    )
    response = deserialize_sample_response(body)
    assert [s.stop_reason for s in response.sequences] == ["stop", "length"]
    assert [list(s.tokens) for s in response.sequences] == [[72, 105, 258], [1]]
    assert response.sequences[0].logprobs == pytest.approx([-0.1, -0.2, -0.3])
    assert response.prompt_logprobs is not None and response.prompt_logprobs[1] == -1.5


def test_a_malformed_forward_backward_body_gets_a_400_that_says_so(
    tinker_sandbox: SandboxHandle,
) -> None:
    request = urllib.request.Request(
        tinker_sandbox.base_url.removesuffix("/v1") + "/tinker/api/v1/forward_backward",
        data=b"\x0a\xff\xff",
        headers={"X-API-Key": TINKER_KEY, "Content-Type": "application/x-protobuf"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400
    assert "not a ForwardBackwardRequest" in json.loads(refused.value.read())["error"]["message"]


def test_transformers_and_the_sandbox_tokenize_alike_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = write_tokenizer(tmp_path / "tok")
    assert folder.is_absolute() and ":" not in str(folder)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    text = "Plain words, émigré ünïcode, 数字 42 and emoji 🙂.\n\tTabs too."
    assert tokenizer.encode(text, add_special_tokens=False) == encode(text)
    assert decode(encode(text)) == text
    assert tokenizer.convert_tokens_to_ids(list(SPECIAL_TOKENS)) == [256, 257, 258]
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi?"},
        {"role": "assistant", "content": "Hello."},
        {"role": "assistant", "content": "Not this one.", "weight": 0},
    ]
    tokens, weights = render_chat(messages, tokenizer)
    assert (tokens, weights) == render_chat(messages)
    trained = [t for t, w in zip(tokens, weights, strict=True) if w > 0]
    assert decode(trained) == "Hello."
    assert tokenizer.eos_token_id == 258 and trained[-1] == 258
