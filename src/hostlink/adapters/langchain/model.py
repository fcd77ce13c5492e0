"""`ChatClaudeCode`: the Claude Code provider as a LangChain chat model.

Claude only proposes tool calls: LangChain (or LangGraph) executes them. The rounds of one
conversation share a host session, so the next round's `claude` is prewarmed while the tools
run (`hostlink.adapters.claude_request.Conversations`); concurrent conversations share
nothing. Cancelling the task (or Ctrl-C in a synchronous call, or leaving a stream early)
stops its `claude`. Provider failures raise
LangChain's model errors with the provider's message, never reply text.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import replace
from operator import itemgetter
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.output_parsers.openai_tools import JsonOutputKeyToolsParser, PydanticToolsParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda, RunnableMap, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_core.utils.pydantic import is_basemodel_subclass
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from hostlink.adapters.claude_request import (
    ClaudeSettings,
    Conversations,
    ToolChoice,
    extra_usage_problem,
    model_spec,
    unknown_model,
    with_tools,
)
from hostlink.adapters.langchain.errors import model_error
from hostlink.adapters.langchain.messages import ai_message, context_of, last_chunk, tool_definitions
from hostlink.claude_code import PROVIDER_NAME
from hostlink.host import Context, Done, ErrorEvent, ModelSpec, StreamEvent, TextDelta, ThinkingDelta, ToolCallEvent

_STRUCTURED_METHODS = ("function_calling", "json_schema", "json_mode")


class ChatClaudeCode(BaseChatModel):
    """The user's signed-in `claude` CLI as a chat model: `ChatClaudeCode(model="sonnet")`.

    `model` is an alias the CLI knows (`sonnet`, `opus`, `haiku`, `fable`) or a family's
    model id. `cwd` is the directory `claude` runs in (default: the current one when a
    request starts). `extra_usage` (`allow` | `warn` | `refuse`; default
    `HOSTLINK_CLAUDE_EXTRA_USAGE`, else `warn`): once the plan's window is used up, `refuse`
    fails requests with `ClaudeQuotaExceededError` before any `claude` starts, until the
    window resets. `options` and `environ` are for tests (a local fake API, a PATH that
    finds a particular `claude`).

    A conversation left after a round that proposed tools keeps its prewarmed `claude` for
    at most 30 s; `close()` ends it now (so do garbage collection and the end of the program).
    """

    model: str = "sonnet"
    cwd: Path | None = None
    extra_usage: str | None = None
    options: Any = Field(default=None, exclude=True)
    environ: Mapping[str, str] | None = Field(default=None, exclude=True, repr=False)

    model_config = ConfigDict(arbitrary_types_allowed=True)
    _conversations: Conversations = PrivateAttr()

    @model_validator(mode="after")
    def _known(self) -> ChatClaudeCode:
        if model_spec(self.model) is None:
            raise ValueError(unknown_model(self.model))
        problem = extra_usage_problem(self.extra_usage)
        if problem:
            raise ValueError(problem)
        self._conversations = Conversations(ClaudeSettings(cwd=self.cwd, extra_usage=self.extra_usage,
                                                           options=self.options, environ=self.environ))
        return self

    def close(self) -> None:
        """End the conversations left waiting for a next round, and their prewarmed `claude`."""
        self._conversations.close()

    @property
    def _llm_type(self) -> str:
        return PROVIDER_NAME

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        return LangSmithParams(ls_provider=PROVIDER_NAME, ls_model_name=self.model, ls_model_type="chat")

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None,
                   **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Offer `tools` (LangChain tools, pydantic models, functions, dicts) for Claude to
        propose; `tool_choice` is `auto`, `none`, `any` (or `required`, `True`), a tool's
        name, or OpenAI's or Anthropic's object naming one. A choice that names no bound
        tool is refused here."""
        definitions = tool_definitions(tools)
        _choice(tool_choice, [tool.name for tool in definitions])  # refused now rather than at the call
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], tool_choice=tool_choice, **kwargs)

    def with_structured_output(self, schema: dict[str, Any] | type, *, include_raw: bool = False,
                               **kwargs: Any) -> Runnable[LanguageModelInput, dict[str, Any] | Any]:
        """The answer as `schema` (a pydantic model, a TypedDict or a JSON Schema / OpenAI
        tool dict): Claude answers through a tool taking the schema, as with `hostlink
        serve`. Every `method` LangChain names works that way; an answer that does not match
        the schema is an `OutputParserException`, never content."""
        method = kwargs.pop("method", None) or "function_calling"
        kwargs.pop("strict", None)  # the answer is always checked against the schema
        if method not in _STRUCTURED_METHODS:
            raise ValueError(f"method: {str(method)[:40]!r} is not one of {', '.join(_STRUCTURED_METHODS)}")
        if kwargs:
            raise ValueError(f"with_structured_output takes no {', '.join(sorted(kwargs))}")
        name = convert_to_openai_tool(schema)["function"]["name"]
        bound = self.bind_tools([schema], tool_choice=name, answer_tool=name,
                                ls_structured_output_format={"kwargs": {"method": method}, "schema": schema})
        parser: Runnable[Any, Any]
        if isinstance(schema, type) and is_basemodel_subclass(schema):
            parser = PydanticToolsParser(tools=[schema], first_tool_only=True)
        else:
            parser = JsonOutputKeyToolsParser(key_name=name, first_tool_only=True) | RunnableLambda(
                _checked(convert_to_openai_tool(schema)["function"].get("parameters") or {}))
        if not include_raw:
            return bound | parser
        parsed = RunnablePassthrough.assign(parsed=itemgetter("raw") | parser, parsing_error=lambda _: None)
        failed = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=bound) | parsed.with_fallbacks([failed], exception_key="parsing_error")

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        return self._conversations.run_sync(lambda: self._agenerate(messages, stop, None, **kwargs))

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        for chunk in self._conversations.iterate_sync(lambda: self._astream(messages, stop, None, **kwargs)):
            if run_manager is not None and chunk.text:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        notices: list[str] = []
        async with self._events(messages, stop, kwargs, notices) as events:
            async for event in events:
                if isinstance(event, Done):
                    message = ai_message(event.message, self._metadata(event, notices))
                    return ChatResult(generations=[ChatGeneration(message=message)])
                if isinstance(event, ErrorEvent):
                    raise model_error(event)
        raise RuntimeError("the Claude Code stream ended without an answer")

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        notices: list[str] = []
        calls = 0
        async with self._events(messages, stop, kwargs, notices) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    chunk = ChatGenerationChunk(message=AIMessageChunk(content=event.delta))
                    if run_manager is not None:
                        await run_manager.on_llm_new_token(event.delta, chunk=chunk)
                elif isinstance(event, ThinkingDelta):
                    chunk = ChatGenerationChunk(message=AIMessageChunk(
                        content="", additional_kwargs={"reasoning_content": event.delta}))
                elif isinstance(event, ToolCallEvent):
                    call = event.tool_call
                    chunk = ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[
                        {"type": "tool_call_chunk", "id": call.id, "name": call.name,
                         "args": json.dumps(dict(call.arguments)), "index": calls}]))
                    calls += 1
                elif isinstance(event, Done):
                    chunk = ChatGenerationChunk(message=last_chunk(event.message, self._metadata(event, notices)))
                else:  # ErrorEvent, the stream's last
                    raise model_error(event)
                yield chunk

    @asynccontextmanager
    async def _events(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any],
                      notices: list[str]) -> AsyncGenerator[AsyncIterator[StreamEvent]]:
        """The provider's events for one call, the answer cut at its first stop sequence
        (hostlink cuts it as serve does: Claude Code cannot pass them to the model)."""
        from hostlink.serve import stops

        spec, context = self._request(messages, stop, kwargs)
        async with self._conversations.events(spec, context, notices) as events, \
                aclosing(stops.cut(events, context.settings.stop_sequences)) as answer:
            yield answer

    def _request(self, messages: list[BaseMessage], stop: list[str] | None,
                 kwargs: dict[str, Any]) -> tuple[ModelSpec, Context]:
        """What `Conversations.events` takes for one call; what Claude Code cannot honour is refused."""
        from hostlink.serve import stops
        from hostlink.serve.core import ApiError

        tools = tool_definitions(kwargs.pop("tools", None) or [])
        choice = _choice(kwargs.pop("tool_choice", None), [tool.name for tool in tools])
        answer_tool = kwargs.pop("answer_tool", None)
        kwargs.pop("ls_structured_output_format", None)
        if kwargs:
            raise ValueError(f"Claude Code takes no {', '.join(sorted(kwargs))} (call options it would not honour)")
        try:
            sequences = stops.sequences(stop, "stop", listed_only=True, limit=stops.MAX_LISTED)
        except ApiError as error:
            raise ValueError(error.message) from None
        if sequences and answer_tool is not None:
            raise ValueError("stop: stop sequences cannot cut a structured answer; leave one of them out")
        spec = model_spec(self.model)
        assert spec is not None  # checked when the model was made
        context = with_tools(context_of(messages), tools, choice, answer_tool)
        return spec, replace(context, settings=replace(context.settings, stop_sequences=sequences))

    def _metadata(self, done: Done, notices: list[str]) -> dict[str, Any]:
        return {"model_name": self.model, "model_provider": PROVIDER_NAME, "stop_reason": done.message.stop_reason,
                "stop_sequence": done.message.stop_sequence, "notices": list(notices)}


def _choice(value: Any, names: list[str]) -> ToolChoice:
    """LangChain's `tool_choice` in its forms (a mode, a name, `True`, OpenAI's or Anthropic's
    object); a name must be a bound tool's."""
    if isinstance(value, Mapping):
        kind = value.get("type")
        function = value.get("function")
        value = function.get("name") if kind == "function" and isinstance(function, Mapping) else (
            value.get("name") if kind == "tool" else kind)
    if value is None or value == "auto":
        return ToolChoice()
    if value is False or value == "none":
        return ToolChoice("none")
    if value is True or value in ("any", "required"):
        return ToolChoice("any")
    if isinstance(value, str) and value in names:
        return ToolChoice("tool", value)
    raise ValueError(f"tool_choice: {str(value)[:80]!r} is neither auto, none, any nor a bound tool's name")


def _checked(schema: dict[str, Any]) -> Callable[[Any], Any]:
    """A step that passes an answer matching `schema` on and refuses one that does not."""
    import jsonschema_rs

    validator = jsonschema_rs.validator_for(schema)

    def check(value: Any) -> Any:
        error = next(validator.iter_errors(value), None) if value is not None else None
        if value is None or error is not None:
            where = "/".join(str(step) for step in error.instance_path) if error is not None else ""
            raise OutputParserException(f"Claude's answer does not match the schema{' at ' + where if where else ''}")
        return value

    return check
