"""The ToolRL answer format: the system prompt that teaches it and the parser that reads it back.

A response is ``<think>…</think>`` followed by a tool call block, a response block, or both::

    <think> reasoning </think>
    <tool_call>
    {"name": "tool_a", "parameters": {"x": 1}}
    {"name": "tool_b", "parameters": {}}
    </tool_call>
    <response> text for the user </response>

Standard library only: the BFCL scorer imports this module in its own environment.
"""

from __future__ import annotations

import json
import re

#: What the ground truth asks for; decides the tag structure the format reward expects.
ANSWER_TOOL_CALL = "tool_call"
ANSWER_RESPONSE = "response"
ANSWER_BOTH = "tool_call+response"
ANSWER_THINK_ONLY = "think"
ANSWER_TYPES = (ANSWER_TOOL_CALL, ANSWER_RESPONSE, ANSWER_BOTH, ANSWER_THINK_ONLY)

_SYSTEM_PROMPT = """\
You are an assistant that completes the user's task by calling tools when they help.

# Tools
Each line below describes one tool you may call, as a JSON schema:
{tools}

# How to answer
First reason inside <think> </think>. Then write a <tool_call> block, a <response> block, or both \
(tool call first), each at most once:
<think> your reasoning </think>
<tool_call>
{{"name": "tool name", "parameters": {{"parameter name": "value", "...": "..."}}}}
{{"name": "another tool name", "parameters": {{"...": "..."}}}}
</tool_call>
<response> your message to the user </response>

# Rules
1. Inside <tool_call>, write one JSON object per line, each with a "name" and a "parameters" object \
(an empty object {{}} when the tool takes no parameters). Several calls go on separate lines of one block.
2. Use only the tools listed above, with parameter values of the types their schemas give.
3. If no tool fits the request, or a required parameter is missing from it, call no tool: explain why in \
<response>."""


def tool_schema_line(tool: dict) -> str:
    """One tool as a compact JSON line (name, description, parameters schema)."""
    return json.dumps(
        {key: tool[key] for key in ("name", "description", "parameters") if key in tool}, ensure_ascii=False
    )


def system_prompt(tools: list[dict]) -> str:
    """The system message listing ``tools`` (JSON function schemas) and the required answer format."""
    return _SYSTEM_PROMPT.format(tools="\n".join(tool_schema_line(tool) for tool in tools))


def build_prompt(messages: list[dict], tools: list[dict]) -> list[dict]:
    """Chat messages for one item: our system prompt, then the item's conversation.

    A system message of the item (some BFCL live questions have one) is appended to ours, so the model
    sees a single system turn, which every chat template supports.
    """
    system = system_prompt(tools)
    conversation = []
    for message in messages:
        if message["role"] == "system":
            system += "\n\n" + message["content"]
        else:
            conversation.append({"role": message["role"], "content": message["content"]})
    return [{"role": "system", "content": system}, *conversation]


def answer_type_of(ground_truth_text: str) -> str:
    """The answer type of a ground-truth response in ToolRL's format (which tags it contains)."""
    has_call, has_response = "<tool_call>" in ground_truth_text, "<response>" in ground_truth_text
    if has_call and has_response:
        return ANSWER_BOTH
    if has_call:
        return ANSWER_TOOL_CALL
    if has_response:
        return ANSWER_RESPONSE
    return ANSWER_THINK_ONLY


_EXPECTED_STRUCTURE = {
    ANSWER_TOOL_CALL: re.compile(r"<think>.*?</think>\n<tool_call>\n.*?\n</tool_call>", re.DOTALL),
    ANSWER_RESPONSE: re.compile(r"<think>.*?</think>\n<response>.*?</response>", re.DOTALL),
    ANSWER_BOTH: re.compile(
        r"<think>.*?</think>\n<tool_call>\n.*?\n</tool_call>\n<response>.*?</response>", re.DOTALL
    ),
    ANSWER_THINK_ONLY: re.compile(r"<think>.*?</think>", re.DOTALL),
}
_TAGS_OF = {
    ANSWER_TOOL_CALL: ("think", "tool_call"),
    ANSWER_RESPONSE: ("think", "response"),
    ANSWER_BOTH: ("think", "tool_call", "response"),
    ANSWER_THINK_ONLY: ("think",),
}


def has_expected_format(text: str, answer_type: str) -> bool:
    """Whether ``text`` has exactly the tag structure of ``answer_type``.

    The whole text (surrounding whitespace ignored) must match the structure; each expected tag must open
    and close exactly once and the tags of the other answer types must not occur at all (so a tool call
    hidden inside ``<think>`` or ``<response>`` does not pass). The tool call block's JSON is not judged
    here (a malformed call has the format and scores −3 in ``correct``), except that a line nested deeper
    than :data:`MAX_CALL_NESTING` is no tool call the parser reads, so its block is out of format.

    Linear in the text's length: the tags are counted first, so the structure's pattern only runs on text
    holding each tag at most once (on repeated tags its lazy groups backtrack quadratically).
    """
    if answer_type not in _EXPECTED_STRUCTURE:
        raise ValueError(f"Unknown answer type {answer_type!r}; expected one of {ANSWER_TYPES}.")
    text = text.strip()
    expected = _TAGS_OF[answer_type]
    for tag in ("think", "tool_call", "response"):
        count = 1 if tag in expected else 0
        if text.count(f"<{tag}>") != count or text.count(f"</{tag}>") != count:
            return False
    if not _EXPECTED_STRUCTURE[answer_type].fullmatch(text):
        return False
    block = _first_block(text)
    return block is None or not any(nesting_depth(line) > MAX_CALL_NESTING for line in block.splitlines())


class ToolCallParseError(ValueError):
    """A ``<tool_call>`` block whose lines are not ``{"name": str, "parameters": {...}}`` JSON objects."""


#: The deepest nesting of ``[`` and ``{`` a tool call line may have (a call's parameters nest a few levels;
#: the JSON decoder recurses once per level, so a line nested thousands deep would raise ``RecursionError``).
#: A deeper line is unparsable: ``correct`` −3, ``format`` 0, no call in the diagnostics.
MAX_CALL_NESTING = 64
_OPEN_TAG, _CLOSE_TAG = "<tool_call>", "</tool_call>"
#: The characters that decide JSON nesting: quotes, backslashes (escapes inside strings) and brackets.
_JSON_STRUCTURE = re.compile(r'["\\\[\]{}]')


def nesting_depth(line: str) -> int:
    """The deepest nesting of ``[``/``{`` in ``line`` outside JSON strings, in one pass over its quotes,
    backslashes and brackets (an unbalanced closing bracket counts as closing nothing)."""
    depth = deepest = 0
    in_string, escaped_until = False, -1
    for token in _JSON_STRUCTURE.finditer(line):
        position, char = token.start(), token.group()
        if in_string:
            if position < escaped_until:
                continue
            if char == "\\":
                escaped_until = position + 2
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
    return deepest


def _first_block(text: str) -> str | None:
    """The content of the first closed ``<tool_call>`` block, or None: the first opening tag and the first
    closing tag after it (what a lazy ``<tool_call>(.*?)</tool_call>`` search finds, in linear time: when the
    first opening tag has no closing tag after it, no later one has)."""
    start = text.find(_OPEN_TAG)
    if start < 0:
        return None
    end = text.find(_CLOSE_TAG, start + len(_OPEN_TAG))
    return None if end < 0 else text[start + len(_OPEN_TAG) : end]


def parse_tool_calls(text: str) -> list[dict] | None:
    """The calls of the first ``<tool_call>`` block of ``text`` as ``[{"name": str, "parameters": dict}]``.

    Returns None when there is no (closed) ``<tool_call>`` block. Blank lines inside the block are skipped;
    any other line must be a JSON object with a string ``name`` and an object ``parameters``, nested at most
    :data:`MAX_CALL_NESTING` deep, else :class:`ToolCallParseError` is raised (never another exception: a
    number past the interpreter's integer-digit limit is a parse error too). Keys other than those two are
    dropped.
    """
    block = _first_block(text)
    if block is None:
        return None
    calls = []
    for line in block.strip().splitlines():
        if not line.strip():
            continue
        if nesting_depth(line) > MAX_CALL_NESTING:
            raise ToolCallParseError(f"tool call line is nested deeper than {MAX_CALL_NESTING}: {line!r:.200}")
        try:
            call = json.loads(line)
        except (ValueError, RecursionError) as error:  # JSONDecodeError; int digit limit; deep nesting
            raise ToolCallParseError(f"tool call line is not JSON: {line!r:.200} ({error})") from error
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("name"), str)
            or not isinstance(call.get("parameters"), dict)
        ):
            raise ToolCallParseError(
                f'tool call line is not {{"name": str, "parameters": {{...}}}}: {line!r:.200}'
            )
        calls.append({"name": call["name"], "parameters": call["parameters"]})
    return calls
