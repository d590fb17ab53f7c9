"""Reference Triton kernels for the judge.

Use `from reference.matmul import matmul, exact_with_scales`.

Nothing is imported here on purpose: TRITON_INTERPRET is read when the
kernels are decorated, i.e. when reference.matmul is first imported, so
`import reference` alone must not fix it. (Re-exporting the function
`matmul` here would also shadow the submodule of the same name.)
"""
