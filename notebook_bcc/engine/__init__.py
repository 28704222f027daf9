"""The engine: seed 003's Client loop driving the FSM, a planner, the kernel and the store."""

from notebook_bcc.engine.engine import Engine, RunResult, exit_code_for
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.engine.runtime import KernelRuntime

__all__ = ["Engine", "EngineOptions", "KernelRuntime", "RunResult", "exit_code_for"]
