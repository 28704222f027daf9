"""nbclient's ``NotebookClient`` without a JSON-schema check per output message.

``nbformat.v4.output_from_msg`` validates every output it builds against the nbformat schema,
and validation of a schema *fragment* runs through ``jsonschema`` (nbformat's fast validator
only handles whole notebooks): a large part of the per-cell client cost. Outputs here are
built as plain ``NotebookNode`` objects of the same shape and validated once, when the writer
writes their cell (:func:`notebook_bcc.kernel.serialize.validate_cell`). Everything else --
output widgets, display ids, ``clear_output(wait=True)`` -- behaves as in nbclient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nbclient import NotebookClient
from nbformat.notebooknode import NotebookNode

from notebook_bcc.kernel.cells import node

_FIELDS: dict[str, tuple[str, ...]] = {
    "execute_result": ("metadata", "data", "execution_count"),
    "display_data": ("metadata", "data"),
    "stream": ("name", "text"),
    "error": ("ename", "evalue", "traceback"),
}


def output_node(msg: dict[str, Any]) -> NotebookNode | None:
    """The nbformat output for an iopub output message, or None for other message types."""
    msg_type = msg["header"]["msg_type"]
    fields = _FIELDS.get(msg_type)
    if fields is None:
        return None
    content = msg["content"]
    out: dict[str, Any] = {"output_type": msg_type}
    for name in fields:
        value = content.get(name)
        if name in ("metadata", "data"):
            value = node(dict(value or {}))
        elif name == "traceback":
            value = list(value or [])
        out[name] = value
    return node(out)


def _joined_stream(outs: list[NotebookNode], out: NotebookNode) -> bool:
    """Append a stream chunk to the previous output when that is the same stream.

    The kernel flushes stdout in chunks whose boundaries depend on timing (one ``print`` can
    arrive as two messages under load); JupyterLab's output area joins them, and so does the
    cell, so a cell's outputs do not depend on how busy the machine was.
    """
    if out.get("output_type") != "stream" or not outs:
        return False
    last = outs[-1]
    if last.get("output_type") != "stream" or last.get("name") != out.get("name"):
        return False
    last["text"] = str(last.get("text") or "") + str(out.get("text") or "")
    return True


OutputListener = Callable[[str, NotebookNode], None]
"""Called with ``(cell_id, output)`` for each output a running cell produces, as it arrives."""


class BccNotebookClient(NotebookClient):
    """A ``NotebookClient`` whose outputs skip the per-message schema validation.

    ``output_listener`` (optional) sees every output as it arrives (``--log-output``).
    """

    output_listener: OutputListener | None = None
    on_idle: Callable[[], None] | None = None
    """Called when the running cell's ``status: idle`` arrives (``KernelSession._run_cell``
    gives its reply a grace period from then)."""

    def process_message(
        self, msg: dict[str, Any], cell: NotebookNode, cell_index: int
    ) -> NotebookNode | None:
        """nbclient's handling of one iopub message of the running cell; notes its ``idle``."""
        if (
            self.on_idle is not None
            and msg.get("msg_type") == "status"
            and (msg.get("content") or {}).get("execution_state") == "idle"
        ):
            self.on_idle()
        return super().process_message(msg, cell, cell_index)

    def output(
        self,
        outs: list[NotebookNode],
        msg: dict[str, Any],
        display_id: str | None,
        cell_index: int,
    ) -> NotebookNode | None:
        """Append the output ``msg`` carries to ``outs`` (nbclient's logic, unvalidated)."""
        parent_msg_id = msg["parent_header"].get("msg_id")
        if self.output_hook_stack[parent_msg_id]:
            hook = self.output_hook_stack[parent_msg_id][-1]
            hook.output(outs, msg, display_id, cell_index)
            return None
        out = output_node(msg)
        if out is None:
            self.log.error(f"unhandled iopub msg: {msg['msg_type']}")
            return None
        if self.clear_before_next_output:
            outs[:] = []
            self.clear_display_id_mapping(cell_index)
            self.clear_before_next_output = False
        if display_id:
            cell_map = self._display_id_map.setdefault(display_id, {})
            cell_map.setdefault(cell_index, []).append(len(outs))
        if not _joined_stream(outs, out):
            outs.append(out)
        listener = self.output_listener
        if listener is not None:
            cells = self.nb.cells
            cell_id = str(cells[cell_index].get("id", "")) if 0 <= cell_index < len(cells) else ""
            listener(cell_id, out)
        return out
