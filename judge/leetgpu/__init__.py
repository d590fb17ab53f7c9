"""LeetGPU's own challenge folders, loaded at run time from the user's clone.

With `--leetgpu-repo PATH` (or $JUDGE_LEETGPU_REPO) every folder
`challenges/<difficulty>/<number>_<name>/` of a clone of LeetGPU's public
challenges repository becomes a challenge named `leetgpu/<name>`. Nothing of
that repository is copied into ours (its licence forbids it): its files are
read where the user keeps them, each time.

How a folder becomes our `Challenge` (judge.challenge):

- the signature comes from `get_solve_signature()`: ctypes pointers to
  float or int are float32 / int32 tensors, ctypes ints are dimensions; the
  roles come from the `(type, "in" | "out" | "inout")` tuples when given,
  else from running `reference_impl` on the example test (a tensor it writes
  is an output; one whose initial value changes its own result is inout);
- one case per generated test (the example, each functional test, the
  performance test), whose data is drawn by the folder's own generator under
  `torch.manual_seed(seed)` with `device="cuda"` rewritten to the run's
  device. The generator's code travels in the case's plan, so the worker
  (which builds the submission's inputs, judge.cases.make_inputs) and the
  judge (which builds them again for the truth) run the same code with the
  same seed and get the same tensors; shapes and dimensions are read from a
  generator run on the `meta` device (no data), or on the CPU when it needs
  values;
- the truth is `reference_impl` on copies of the inputs, in the trusted
  judge process (asserts stripped: they insist on CUDA tensors), and the
  policy `leetgpu` is `allclose` with the challenge's own atol and rtol;
- the statement is challenge.html as text, the starter
  starter/starter.triton.py.

A folder that cannot be loaded is reported with the reason; the others
still load. docs/leetgpu.md describes the feature.
"""

# The package's modules, one job each; the public names are re-exported here.
from .folder_code import bundle, instance
from .discovery import ENV, PREFIX, available, challenges_root, folders, repo_path
from .generation import TESTS, generate, make_inputs, on_device, run_generator, seeded
from .loading import DIFFICULTIES, load
from .model import CPU_MAX_ELEMENTS
from .reference import call_reference, infer_roles
from .statement import html_to_text

__all__ = ["CPU_MAX_ELEMENTS", "DIFFICULTIES", "ENV", "PREFIX", "TESTS", "available", "bundle",
           "call_reference", "challenges_root", "folders", "generate", "html_to_text", "infer_roles",
           "instance", "load", "make_inputs", "on_device", "repo_path", "run_generator", "seeded"]
