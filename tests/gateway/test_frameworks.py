"""Issue 26, seen by agent frameworks: no framework runs a call the model did not finish.

LangChain (``langchain-openai``), the OpenAI Agents SDK (``openai-agents``) and PydanticAI drive the proxy in front
of the stub upstream (``gateway_support.upstream``) with a tool that counts its invocations: models cut by
``max_tokens`` inside a call's value (``rm -rf /tmp/build`` after ``rm -rf /``; a JSON body and an XML body) and a
model whose call body is malformed, streamed and not, ``stream_arguments`` off and on, the deltas in the splits
the request's seed draws. The tool is never invoked. Without the option (and for whole answers) the framework
ends with the text around the block and no call; with it, a streamed call that went out in pieces and was then
abandoned withdraws the answer: the framework raises the proxy's error.
"""

from __future__ import annotations

import asyncio

import pytest

openai = pytest.importorskip("openai", reason="the frameworks' client is the openai SDK")
pytest.importorskip("aiohttp", reason="the proxy and the stub upstream run on aiohttp")
langchain_openai = pytest.importorskip("langchain_openai", reason="LangChain's OpenAI chat model")
agents = pytest.importorskip("agents", reason="the OpenAI Agents SDK")
pydantic_ai = pytest.importorskip("pydantic_ai", reason="PydanticAI")

from pydantic_ai.exceptions import ModelAPIError  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from .test_truncation import proxies  # noqa: E402, F401 (a fixture: the proxies, option off and on)

#: model -> the text a client is left with when no call is taken (the block removed: cut, or malformed)
MODELS = {"truncated": "Running it.", "truncated_xml": "Running it.", "malformed": "Here it is. Done."}
INVOKED: list = []


def run(command: str) -> str:
    """Run a shell command."""
    INVOKED.append(("run", command))
    return "ok"


def get_weather(city: str) -> str:
    """The weather in a city."""
    INVOKED.append(("get_weather", city))
    return "sunny"


def base_url(client) -> str:
    return str(client.base_url)


@pytest.fixture(autouse=True)
def no_invocation():
    INVOKED.clear()
    yield
    assert INVOKED == []  # whatever the outcome, no tool ran


def withdrawn(on: bool, streamed: bool) -> bool:
    """Whether the answer is withdrawn: a call went out in pieces, then was abandoned (all models here)."""
    return on and streamed


def langchain(url: str, model: str, streamed: bool, seed: int) -> str:
    llm = langchain_openai.ChatOpenAI(
        model=model, base_url=url, api_key="sk-test", max_retries=0, streaming=streamed, seed=seed
    ).bind_tools([run, get_weather])
    if streamed:
        message = None
        for chunk in llm.stream("clean up"):
            message = chunk if message is None else message + chunk
    else:
        message = llm.invoke("clean up")
    assert (message.tool_calls, message.invalid_tool_calls) == ([], [])
    return message.content


def openai_agents(url: str, model: str, streamed: bool, seed: int) -> str:
    async def go():
        async with openai.AsyncOpenAI(base_url=url, api_key="sk-test", max_retries=0) as client:
            return await with_client(client)

    async def with_client(client):
        agent = agents.Agent(
            name="ops",
            instructions="Use the tools.",
            tools=[agents.function_tool(run), agents.function_tool(get_weather)],
            model=agents.OpenAIChatCompletionsModel(model=model, openai_client=client),
            model_settings=agents.ModelSettings(extra_body={"seed": seed}),
        )
        if not streamed:
            return (await agents.Runner.run(agent, "clean up", max_turns=2)).final_output
        result = agents.Runner.run_streamed(agent, "clean up", max_turns=2)
        async for _ in result.stream_events():
            pass
        return result.final_output

    agents.set_tracing_disabled(True)
    return asyncio.run(go())


def pydantic_ai_agent(url: str, model: str, streamed: bool, seed: int) -> str:
    async def go():
        async with openai.AsyncOpenAI(base_url=url, api_key="sk-test", max_retries=0) as client:
            chat = OpenAIChatModel(model, provider=OpenAIProvider(openai_client=client))
            agent = pydantic_ai.Agent(chat, tools=[run, get_weather], model_settings={"seed": seed})
            if not streamed:
                return (await agent.run("clean up")).output
            async with agent.run_stream("clean up") as result:
                return await result.get_output()

    return asyncio.run(go())


FRAMEWORKS = {"langchain": langchain, "openai-agents": openai_agents, "pydantic-ai": pydantic_ai_agent}


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("on", [False, True], ids=["off", "on"])
@pytest.mark.parametrize("seed", [1, 2])
def test_no_framework_runs_an_unfinished_call(proxies, framework, model, streamed, on, seed):  # noqa: F811
    call = FRAMEWORKS[framework]
    url = base_url(proxies[on])
    if withdrawn(on, streamed):
        with pytest.raises(Exception, match="abandoned") as raised:
            call(url, model, streamed, seed)
        # each as its own error type: the openai SDK's, or PydanticAI's around it
        assert isinstance(raised.value, (openai.APIError, ModelAPIError))
    else:
        assert call(url, model, streamed, seed).strip() == MODELS[model]
