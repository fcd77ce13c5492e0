"""A CrewAI crew as its users write one, its LLM `hostlink serve`'s OpenAI endpoint: run by
test_crewai.py with the interpreter of .venv-crewai/ (CrewAI cannot share hostlink's
environment). Prints the crew's answer, and the cities its tool was run for, as JSON."""

import json
import os

from crewai import LLM, Agent, Crew, Task
from crewai.tools import tool

ran: list[str] = []


@tool("get_weather")
def get_weather(city: str) -> str:
    """The weather in a city."""
    ran.append(city)
    return f"sunny-{city.lower()}-4711"


llm = LLM(model="openai/sonnet", base_url=os.environ["HOSTLINK_BASE_URL"] + "/v1", api_key=os.environ["HOSTLINK_KEY"])
forecaster = Agent(role="Forecaster", goal="Tell the weather", backstory="You answer weather questions.", llm=llm,
                   tools=[get_weather], max_iter=3)
task = Task(description="What is the weather in Rome?", expected_output="One sentence.", agent=forecaster)
result = Crew(agents=[forecaster], tasks=[task]).kickoff()
print(json.dumps({"answer": result.raw, "ran": ran}))
