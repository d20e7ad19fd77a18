"""The chat simulator: one request body in, JSON-ready choices and usage out (with token
logprob entries shaped like the API's ``ChatCompletionTokenLogprob``)."""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from labmgr.sandbox.errors import model_not_found

from .catalogue import CATALOGUE, ModelCard, served_model_name
from .freeform import answer_free_form, fit_budget
from .persona import Persona, PersonaProfile
from .plan import JudgeSettings, Plan, ServedModel, TokenChoice, make_plan, reasoning_tokens
from .ratings import rating_reason
from .request import ChatRequest, context_length_error, parse_request
from .text import split_tokens, stable_hash, token_bytes, truncate_tokens

PLAN_CACHE_SIZE = 4096
_FILLERS = (
    *" the| a| and| to|,|.| of| it| is| that| you| I| in| for| with| this| be| can| on".split("|"),  # noqa: SIM905
    *" more| your|\n| as| some| not".split("|"),  # noqa: SIM905
)
_HALF = math.log(0.5)


def _alternative(token: str, logprob: float, raw: tuple[int, ...]) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": list(raw)}


def single_token_entry(
    choices: Sequence[TokenChoice], index: int, top_logprobs: int
) -> dict[str, Any]:
    """The entry for one sampled token (`choices[index]`) with its listed alternatives."""
    top = [_alternative(*choice) for choice in choices[:top_logprobs]]
    return _alternative(*choices[index]) | {"top_logprobs": top}


def _level_table() -> tuple[tuple[float, tuple[tuple[dict[str, Any], ...], ...]], ...]:
    """Per probability level of the chosen token: its logprob, and per starting filler the
    filler alternatives with logprobs that halve the remaining mass again and again."""
    table = []
    n_fillers = len(_FILLERS)
    for level in range(_LEVELS):
        p = 0.45 + 0.54 * level / (_LEVELS - 1)
        rest = math.log1p(-p)
        rotations = []
        for start in range(n_fillers):
            alternatives = []
            logprob = rest
            for k in range(n_fillers):
                filler = _FILLERS[(start + k) % n_fillers]
                logprob += _HALF
                alternatives.append(_alternative(filler, logprob, token_bytes(filler)))
            rotations.append(tuple(alternatives))
        table.append((math.log(p), tuple(rotations)))
    return tuple(table)


_LEVELS = 32
_TABLE = _level_table()


def text_entries(
    rng: random.Random, tokens: Sequence[str], top_logprobs: int
) -> list[dict[str, Any]]:
    """Entries for generated text: each token the most likely (p 0.45–0.99), shared filler
    alternatives halving the rest below it (treat them as read-only)."""
    entries = []
    n_fillers = len(_FILLERS)
    wanted = top_logprobs - 1
    random_ = rng.random
    for token in tokens:
        logprob, rotations = _TABLE[int(_LEVELS * random_() ** 0.35)]
        raw = list(token_bytes(token))
        top: list[dict[str, Any]] = []
        if top_logprobs:
            top.append({"token": token, "logprob": logprob, "bytes": raw})
            if wanted > 0:
                fillers = rotations[int(n_fillers * random_())][: wanted + 1]
                top.extend([f for f in fillers if f["token"] != token][:wanted])
        entries.append({"token": token, "logprob": logprob, "bytes": raw, "top_logprobs": top})
    return entries


@dataclass
class Completion:
    """The simulator's answer: JSON-ready `choices` and `usage` for a chat completion."""

    choices: list[dict[str, Any]]
    usage: dict[str, Any]
    system_fingerprint: str
    """The base model's fingerprint (``fp_…``), shared by its fine-tunes."""


@dataclass
class ChatSimulator:
    """Answers chat requests for base models and registered fine-tunes."""

    _models: dict[str, ServedModel] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _entropy: random.Random = field(default_factory=random.Random, repr=False)
    plan_cache_size: int = PLAN_CACHE_SIZE
    judges: JudgeSettings = field(default_factory=JudgeSettings)
    """How often judge models give the wrong verdict, or simply the first answer shown."""

    def __post_init__(self) -> None:
        # Plans per (model id, conversation); a (re-)registered model makes them stale.
        self._plan = lru_cache(maxsize=self.plan_cache_size)(self._make_plan)

    def register(self, model_id: str, *, base: str, persona: Persona | None) -> None:
        """Make a fine-tune (or checkpoint) of `base` answerable; a fine-tune of a fine-tune
        keeps its parent's personas and adds its own."""
        parent = self._model(base)
        if parent is None:
            raise ValueError(
                f"cannot register {model_id!r}: its base model {base!r} is neither in the "
                "catalogue nor registered"
            )
        personas = parent.personas
        if persona is not None and persona.assistant_texts:
            personas = (*personas, PersonaProfile.build(persona))
        with self._lock:
            self._models[model_id] = ServedModel(
                model_id, parent.card, personas, parent.fingerprint, parent.salt, model_id
            )
            self._plan.cache_clear()

    def register_base(self, card: ModelCard) -> None:
        """Serve `card` as a base model outside the OpenAI catalogue (another provider's)."""
        with self._lock:
            self._models.setdefault(card.id, _base_model(card))

    def card(self, model_id: str) -> ModelCard | None:
        """The catalogue card behind `model_id` (a fine-tune's root base model), if known."""
        model = self._model(model_id)
        return None if model is None else model.card

    def complete(
        self, model_id: str, body: Mapping[str, Any], *, legacy: bool = False
    ) -> Completion:
        """Answer a chat body (`legacy`: a `/v1/completions` prompt put as one); `APIError` for a
        body the real API would refuse."""
        model = self._served(model_id)
        request = parse_request(body, model.card, legacy=legacy)
        stop = body.get("stop")
        stops = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
        return self._answer(model, request, tuple(s for s in stops if isinstance(s, str) and s))

    def answer(self, model_id: str, request: ChatRequest) -> Completion:
        """Answer a checked Responses API request put as a chat request (`APIError` for an
        unknown model or an input longer than the model's context window)."""
        return self._answer(self._served(model_id), request, (), "input")

    def _served(self, model_id: str) -> ServedModel:
        model = self._model(model_id)
        if model is None:
            raise model_not_found(model_id)
        return model

    def _answer(
        self,
        model: ServedModel,
        request: ChatRequest,
        stops: tuple[str, ...],
        param: str = "messages",
    ) -> Completion:
        plan = self._plan(model.id, request.messages)
        max_tokens = request.max_tokens
        too_long = context_length_error(model.card, plan.prompt_tokens, max_tokens, param)
        if too_long is not None:
            raise too_long
        seed = self._entropy.getrandbits(64)
        if request.seed is not None:
            r = request
            parts = (r.messages, r.temperature, r.max_tokens, r.n, r.logprobs, r.top_logprobs)
            seed = request_seed(model.identity, *parts, r.seed)
        rng = random.Random(seed)
        choices = []
        completion_tokens = 0
        for index in range(request.n):
            choice, n_tokens = self._choice(model, plan, request, rng, index, stops)
            choices.append(choice)
            completion_tokens += n_tokens
        reasoning = 0
        if model.card.reasoning:
            budget = request.max_tokens
            per_choice = reasoning_tokens(plan, request.reasoning_effort)
            reasoning = request.n * (per_choice if budget is None else min(budget, per_choice))
            completion_tokens += reasoning
        return Completion(
            choices,
            {
                "prompt_tokens": plan.prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": plan.prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": reasoning,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
            system_fingerprint=model.fingerprint,
        )

    def _model(self, model_id: str) -> ServedModel | None:
        model = self._models.get(model_id)
        if model is not None:
            return model
        card = CATALOGUE.get(model_id)
        if card is None:
            return None
        model = _base_model(card)
        with self._lock:
            self._models.setdefault(model_id, model)
        return model

    def _make_plan(self, model_id: str, messages: tuple[tuple[str, str], ...]) -> Plan:
        return make_plan(self._models[model_id], messages, self.judges)

    def _choice(
        self,
        model: ServedModel,
        plan: Plan,
        request: ChatRequest,
        rng: random.Random,
        index: int,
        stops: tuple[str, ...],
    ) -> tuple[dict[str, Any], int]:
        first: dict[str, Any] | None = None
        limit = request.max_tokens
        spec = plan.analysis.rating
        analysis = plan.analysis
        one_token = spec is not None or analysis.options_only or (limit is not None and limit <= 5)
        drawn = None
        if plan.single_token is not None and one_token:
            drawn = plan.single_token, plan.single_probs
        elif limit is not None and limit <= 2 and plan.open_token and not model.card.reasoning:
            drawn = plan.open_token, plan.open_probs  # an open prompt cut to a token or two
        if drawn is not None:
            picked = sample_index(rng, drawn[1], request.temperature)
            text = drawn[0][picked][0]
            if request.logprobs:
                first = single_token_entry(drawn[0], picked, request.top_logprobs)
            if spec is not None and spec.wants_reason and (limit is None or limit > 8):
                text = f"{text}\n\n{rating_reason(spec, text)}"
        elif plan.short_answers:
            picked = sample_index(rng, plan.short_probs, request.temperature)
            text = fit_budget(plan.short_answers[picked], limit)
        else:
            text = answer_free_form(model, plan, request.temperature, rng, limit)
        if request.response_format != "text":
            number = int(text) if spec is not None and text.isdigit() else None
            answer = text if spec is None else text.partition("\n\n")[2] or text
            text = render_json(answer, number, request.json_schema)
        finish = "stop"
        for stop in stops:
            cut = text.find(stop)
            if cut >= 0:
                text = text[:cut]
        if model.card.reasoning and limit is not None:
            limit -= reasoning_tokens(plan, request.reasoning_effort)
            if limit <= 0:
                text, limit, finish = "", 0, "length"
        if limit is not None:
            tokens, cut = truncate_tokens(text, limit)
            if cut:
                text = "".join(tokens)
                finish = "length"
        else:
            tokens = split_tokens(text)
        logprobs = None
        if request.logprobs:
            if first is not None and (not tokens or tokens[0] != first["token"]):
                first = None  # a stop sequence cut into the first token
            entries = text_entries(rng, tokens[1:] if first else tokens, request.top_logprobs)
            if first is not None:
                entries.insert(0, first)
            logprobs = {"content": entries, "refusal": None}
        choice = {
            "index": index,
            "finish_reason": finish,
            "message": {"role": "assistant", "content": text, "refusal": None, "annotations": []},
            "logprobs": logprobs,
        }
        return choice, len(tokens)


def _base_model(card: ModelCard) -> ServedModel:
    fingerprint = f"fp_{stable_hash('fingerprint', card.snapshot_of or card.id):08x}"[:13]
    salt = stable_hash(card.snapshot_of or card.id)
    return ServedModel(card.id, card, (), fingerprint, salt, served_model_name(card.id))


def request_seed(*parts: object) -> int:
    """A 64-bit seed from a request's identity (model, messages, parameters, seed)."""
    digest = hashlib.blake2b(repr(parts).encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


def sample_index(rng: random.Random, probabilities: Sequence[float], temperature: float) -> int:
    """Sample from listed probabilities (most likely first) at `temperature`."""
    if temperature <= 0.0 or len(probabilities) == 1:
        return 0
    if temperature == 1.0:
        weights: Sequence[float] = probabilities
    else:
        power = 1.0 / temperature
        weights = [p**power for p in probabilities]
    threshold = rng.random() * sum(weights)
    for index, weight in enumerate(weights):
        threshold -= weight
        if threshold < 0.0:
            return index
    return len(weights) - 1


def render_json(answer: str, number: int | None, schema: Mapping[str, Any] | None) -> str:
    """`answer` as JSON: ``{"score": n}`` for ratings, else ``{"answer": text}``; with a schema
    every property is filled by its type."""
    if not isinstance(schema, Mapping) or not isinstance(schema.get("properties"), Mapping):
        return json.dumps({"score": number} if number is not None else {"answer": answer})
    return json.dumps(_fill(schema, answer, number, schema))


def _fill(schema: Any, answer: str, number: int | None, root: Mapping[str, Any]) -> Any:
    if not isinstance(schema, Mapping):
        return answer
    reference = schema.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/"):
        target: Any = root
        for part in reference[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return _fill(target, answer, number, root)
    for combinator in ("anyOf", "oneOf", "allOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return _fill(options[0], answer, number, root)
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return {}
        return {name: _fill(sub, answer, number, root) for name, sub in properties.items()}
    if kind == "array":
        return [_fill(schema.get("items", {}), answer, number, root)]
    scalars = {"integer": number or 0, "number": float(number or 0), "boolean": True, "null": None}
    return scalars.get(str(kind), answer)
