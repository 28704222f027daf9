"""Pure state machines, no I/O: the workflow FSM, the ExecutionContract, declarative rules."""
