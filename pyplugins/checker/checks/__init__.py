"""The registry of the emulator's checks: every check's name and meaning, and :class:`Violation`.

Every check looks for one way a plugin breaks what TensorRT relies on (docs/trt-protocol.md);
:data:`CHECKS` names them, and a violation carries one of those names. Each concern's check lives
in a module of this package, which the lifecycle driver (:mod:`pyplugins.checker.lifecycle`)
calls into:

- :mod:`~pyplugins.checker.checks.beyond_pos`: ``in_out`` entries read beyond ``pos``;
- :mod:`~pyplugins.checker.checks.clones`: clones sharing state that one of them mutates;
- :mod:`~pyplugins.checker.checks.serialization`: ``serialize()`` results and sizes;
- :mod:`~pyplugins.checker.checks.outputs`: poisoned, guarded outputs; the plugin's reference;
- :mod:`~pyplugins.checker.checks.capture`: CUDA-graph capture of ``enqueue``;
- :mod:`~pyplugins.checker.checks.formats`: the format search's outcome, and every accepted
  format combination run and compared;
- :mod:`~pyplugins.checker.checks.pybind` and :mod:`~pyplugins.emulator.idioms`: idioms
  that pybind11 objects refuse;
- :mod:`~pyplugins.checker.checks.fresh_process`: the engine bytes in a new process;
- :mod:`~pyplugins.checker.checks.kernels`: every ``pp.Kernel`` compiled for every type it
  serves, without a GPU;
- :mod:`~pyplugins.checker.checks.qdp` and :mod:`~pyplugins.checker.checks.aot`: QDP's autotune
  and ``impl`` stream, and the AOT kernel, its signature and launch parameters;
- :mod:`~pyplugins.checker.checks.recorder`: the trampoline listener (callback errors,
  ``enqueue`` on an unconfigured object, the clones as they are made).

Adding a check: its name and meaning here, its function in the module of its concern (or a new
module), its call in the lifecycle driver, and its test.

Example:
    >>> v = Violation("shape", "output 0 dim 1 is -3", "get_output_dimensions")
    >>> print(v)
    [shape] in get_output_dimensions() output 0 dim 1 is -3
    >>> "clone_shares_state" in CHECKS and "attach_shares_state" in CHECKS
    True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional

__all__ = ["CHECKS", "Violation"]

#: Check name -> what it means. Violations carry one of these names in ``check``.
CHECKS: Dict[str, str] = {
    "in_out_beyond_pos": "supports_format_combination read in_out entries after pos, which "
                         "TensorRT has not chosen yet (their contents are junk; §2.1)",
    "clone_shares_state": "a clone and its source share a mutable object that one of them then "
                          "changed in place while the other held it, or clone() returned its "
                          "source or an object lacking the identity properties (§1.2, §10.2)",
    "serialize_nondeterministic": "serialize() returned different bytes across the 2-3 calls "
                                  "TensorRT makes for one serialization (§4.1)",
    "enqueue_unconfigured": "enqueue reached an object whose configure_plugin never ran or raised "
                            "(TensorRT ignores a raising V2 configure_plugin; §1.3, §2.3)",
    "output_mismatch": "enqueue wrote past or short of the declared output size, or the output "
                       "type accepted by supports_format_combination differs from "
                       "get_output_datatype's",
    "capture_unsafe": "enqueue cannot be captured into a CUDA graph, or its graph replays "
                      "differently (allocation, sync, host copy, other stream; §9)",
    "fresh_process": "the engine bytes do not work in a new process that only imports the "
                     "plugin's module (state kept in module globals or __main__; §10.11)",
    "callback_error": "a plugin callback raised or returned a value the binding could not "
                      "interpret; TensorRT printed [ERROR] and used its fallback (§1.4)",
    "shape": "get_output_dimensions gave an empty, negative or unevaluable output dimension",
    "format": "no format combination with the network's types was accepted: the build fails",
    "serialize": "serialization produced no bytes, or get_serialization_size() disagrees with "
                 "len(serialize())",
    "device_error": "the work enqueue launched failed on the device (a CUDA error at the next "
                    "synchronization; the context may be unusable afterwards)",
    "reference_mismatch": "enqueue's outputs differ from the plugin's NumPy reference() beyond "
                          "the per-dtype tolerances of pyplugins.testing",
    "format_unimplemented": "supports_format_combination accepts a (type, format) combination "
                            "whose enqueue does not lay its data out in that format: run on "
                            "every accepted combination, the outputs (converted back to LINEAR) "
                            "differ (the builder picks among accepted combinations by timing; "
                            "§2.1, §3, §12)",
    "pybind": "the plugin relies on plain-Python behaviour that pybind11 objects lack in TensorRT: "
              "enums compared with `is`, Dims compared/hashed, plugins copied or pickled, "
              "BOOL/UINT8 tensors on a V2 plugin (§12)",
    # IPluginV3 (pyplugins.checker.checks.v3, size_tensors, lifecycle_v3)
    "attach_shares_state": "attach_to_context() returned its source object, or a plugin sharing "
                           "mutable state with it (§2.4)",
    "tactics_invalid": "get_valid_tactics() returned a repeated tactic or 0 (§2.4)",
    "fields_nondeterministic": "get_fields_to_serialize() gave different fields on two calls (§4.2)",
    "fields_incomplete": "the plugin create_plugin(RUNTIME) rebuilt from the serialized fields "
                         "differs from the built one: fields or outputs (§4.2)",
    "tactic_not_set": "enqueue ran on a runtime object that never received set_tactic (§2.5)",
    "shape_change_not_kept": "enqueue ran on a runtime object whose on_shape_change never ran "
                             "or raised: get_capability_interface(RUNTIME) must return the same "
                             "object (§2.5)",
    "capability_unstable": "get_capability_interface returned a different object on a second "
                           "call for the same capability (§2.5)",
    "tactic_outputs_differ": "two tactics of the plugin give different outputs for the same "
                             "inputs (GPU)",
    "size_tensor": "a declared size tensor is not a 0-D INT32/INT64 output, or enqueue wrote a "
                   "value outside [0, upper] (§6)",
    "aliasing": "get_aliased_input named an invalid input or one of another type/size, or the "
                "aliased output was not written in place (§7, 10.3+)",
    "kernel_compile": "a pp.Kernel of the plugin can never launch: its .cu file is missing, no "
                      "source defines its name, it does not compile for a type the plugin "
                      "serves, or the source lists no @instantiate line for that type (checked "
                      "without a GPU, through NVRTC or nvcc)",
    # tensorrt.plugin (QDP): pyplugins.checker.lifecycle_qdp, qdp_shapes, checks.qdp, checks.aot
    "shape_branch": "a QDP register function tests a symbolic (or fake) dimension for truth, or "
                    "its symbolic output shapes differ from its result on constant shapes: "
                    "Python cannot branch on a per-inference dimension (§8.1)",
    "impl_output_desc": "a QDP register function gives other output types in TensorRT's shape "
                        "pass than in its type pass, so impl, autotune and aot_impl see "
                        "descriptions TensorRT did not allocate (§8.4)",
    "autotune_types": "a QDP autotune offers a combination whose output types are not the ones "
                      "the register function gives for its input types (§8.5)",
    "impl_stream": "a QDP impl never reads its stream argument: its work goes to the current "
                   "(default) stream, not TensorRT's (§9, §10.4)",
    "aot_kernel_name": "a QDP aot_impl names a kernel its PTX or CUBIN does not contain",
    "aot_ptx_compile": "a QDP aot_impl's PTX does not assemble for the device (ptxas or "
                       "nvJitLink, without a GPU)",
    "aot_signature": "a QDP AOT kernel's parameters do not take the input pointers, extra int "
                     "arguments and output pointers TensorRT launches it with",
    "aot_launch_params": "a QDP aot_impl's grid, block, shared memory or extra arguments take "
                         "values no launch accepts at the profile's min, opt or max shapes",
    "aot_artifact": "the AOT artifact the engine keeps cannot be read back or evaluated in a "
                    "process that never imports the plugin's module",
    "aot_jit_mismatch": "a QDP plugin's AOT kernel and its JIT impl give different outputs for "
                        "the same inputs (GPU)",
    "lifecycle": "a step TensorRT needs returned nothing (no plugin, no clone, no creator for "
                 "the engine's plugin key, num_outputs unset, initialize failed)",
}


@dataclass
class Violation:
    """One broken rule.

    Attributes:
        check: the check's name, a key of :data:`CHECKS`.
        message: what happened, on which object, and how to fix it.
        method: the plugin method involved, when there is one.
    """

    check: str
    message: str
    method: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """JSON-able form."""
        return asdict(self)

    def __str__(self) -> str:
        where = f" in {self.method}()" if self.method else ""
        return f"[{self.check}]{where} {self.message}"
