"""Rules for one whole training example: the supervised chat format and the DPO format."""

from __future__ import annotations

import difflib
from typing import Any

from labmgr.finetuning.training_data.message_rules import Findings, _type_name, check_messages

SUPERVISED_KEYS = ("messages", "tools", "parallel_tool_calls")
PREFERENCE_KEYS = ("input", "preferred_output", "non_preferred_output")


def _unknown_keys(
    found: dict[str, Any], allowed: tuple[str, ...], where: str, out: Findings
) -> None:
    for key in sorted(set(found) - set(allowed)):
        close = difflib.get_close_matches(key, allowed, n=1)
        suggestion = f" (did you mean {close[0]!r}?)" if close else ""
        prefix = f"{where}: " if where else ""
        out.error(f"{prefix}unknown key {key!r}{suggestion}; allowed: {', '.join(allowed)}")


def _check_tools(holder: dict[str, Any], where: str, out: Findings) -> set[str] | None:
    """Check ``tools`` and ``parallel_tool_calls``; the declared function names, or None."""
    prefix = f"{where}." if where else ""
    if "parallel_tool_calls" in holder and not isinstance(holder["parallel_tool_calls"], bool):
        out.error(f"{prefix}parallel_tool_calls must be true or false")
    if "tools" not in holder:
        return None
    tools = holder["tools"]
    if not isinstance(tools, list):
        out.error(f"{prefix}tools must be a list, got {_type_name(tools)}")
        return None
    names: set[str] = set()
    for index, tool in enumerate(tools):
        at = f"{prefix}tools[{index}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            out.error(f"{at} must be an object with type 'function'")
            continue
        function = tool.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            out.error(f"{at}.function needs a string 'name'")
            continue
        for key in sorted(set(function) - {"name", "description", "parameters", "strict"}):
            out.error(f"{at}.function: unknown key {key!r}")
        if "parameters" in function and not isinstance(function["parameters"], dict):
            out.error(f"{at}.function.parameters must be a JSON schema object")
        names.add(function["name"])
    return names


def _undeclared_calls(called: list[str], declared: set[str] | None, out: Findings) -> None:
    if declared is None:
        return
    for name in sorted(set(called) - declared):
        out.warning(f"tool call to {name!r}, which is not declared in 'tools'")


def check_supervised(example: dict[str, Any], out: Findings) -> None:
    """The chat format: ``{"messages": [...], "tools"?: [...], "parallel_tool_calls"?: bool}``."""
    if "messages" not in example and any(key in example for key in PREFERENCE_KEYS):
        out.error("this is a preference (DPO) example; validate with --method dpo")
        return
    _unknown_keys(example, SUPERVISED_KEYS, "", out)
    if "messages" not in example:
        out.error("missing 'messages'")
        return
    declared = _check_tools(example, "", out)
    summary = check_messages(example["messages"], "messages", out)
    if not summary.roles:
        return
    if "assistant" not in summary.roles:
        out.error("no assistant message: there is nothing to train on")
    elif summary.trained_assistant_messages == 0:
        out.error("every assistant message has weight 0: there is nothing to train on")
    if summary.roles[-1] != "assistant":
        out.error(
            f"the last message must be from the assistant, not {summary.roles[-1]} "
            "(messages after the last assistant reply are never trained on)"
        )
    _undeclared_calls(summary.tool_names, declared, out)


def _check_output(value: Any, where: str, out: Findings) -> Any:
    if not isinstance(value, list) or len(value) != 1:
        out.error(f"{where} must be a list holding exactly one assistant message")
        return None
    message = value[0]
    summary = check_messages(value, where, out)
    if summary.roles and summary.roles != ["assistant"]:
        out.error(f"{where}[0] must be an assistant message, not {summary.roles[0]}")
    if isinstance(message, dict) and "weight" in message:
        out.error(f"{where}[0]: 'weight' is not used in preference examples")
    return message


def check_preference(example: dict[str, Any], out: Findings) -> None:
    """The DPO format: ``input`` (messages, tools) plus one preferred and one rejected reply."""
    if "messages" in example and not any(key in example for key in PREFERENCE_KEYS):
        out.error("this is a supervised example; validate with --method supervised")
        return
    _unknown_keys(example, PREFERENCE_KEYS, "", out)
    missing = [key for key in PREFERENCE_KEYS if key not in example]
    if missing:
        out.error("missing " + ", ".join(repr(key) for key in missing))
    prompt = example.get("input")
    declared: set[str] | None = None
    if "input" in example:
        if not isinstance(prompt, dict):
            out.error(f"input must be an object with 'messages', got {_type_name(prompt)}")
        else:
            _unknown_keys(prompt, SUPERVISED_KEYS, "input", out)
            declared = _check_tools(prompt, "input", out)
            if "messages" not in prompt:
                out.error("input: missing 'messages'")
            else:
                summary = check_messages(prompt["messages"], "input.messages", out)
                if summary.roles and summary.roles[-1] == "assistant":
                    out.error("input.messages must not end with an assistant message")
    outputs = [
        _check_output(example[key], key, out)
        for key in ("preferred_output", "non_preferred_output")
        if key in example
    ]
    for message in outputs:
        if isinstance(message, dict):
            calls = message.get("tool_calls")
            calls = calls if isinstance(calls, list) else []  # else reported as a message error
            names = [c["function"]["name"] for c in calls if _is_named_call(c)]
            _undeclared_calls(names, declared, out)
    if len(outputs) == 2 and outputs[0] is not None and outputs[0] == outputs[1]:
        out.warning("preferred_output and non_preferred_output are identical")


def _is_named_call(call: Any) -> bool:
    return (
        isinstance(call, dict)
        and isinstance(call.get("function"), dict)
        and isinstance(call["function"].get("name"), str)
    )


def check_reinforcement(
    example: dict[str, Any], out: Findings, item_fields: tuple[str, ...] = ()
) -> None:
    """The reinforcement format: ``messages`` ending before the answer (the model writes it
    during training), ``tools`` optionally, and any other keys the grader reads as
    ``{{item.KEY}}`` (each of `item_fields` must be present)."""
    if "messages" not in example:
        if any(key in example for key in PREFERENCE_KEYS):
            out.error("this is a preference (DPO) example; validate with --method dpo")
        else:
            out.error("missing 'messages'")
        return
    _check_tools(example, "", out)
    summary = check_messages(example["messages"], "messages", out)
    if summary.roles and summary.roles[-1] == "assistant":
        out.error(
            "the last message must not be the assistant's: in reinforcement fine-tuning the "
            "model writes the answer and the grader scores it"
        )
    for name in item_fields:
        if name not in example:
            out.error(f"missing {name!r}, which the grader reads as {{{{item.{name}}}}}")
