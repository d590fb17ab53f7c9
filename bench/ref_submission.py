"""The reference kernel wrapped as a submission (float32, ieee mode), so the
benchmark can time it through the judge like any other file."""
from reference.matmul import matmul


def solve(a, b, c, M, N, K):
    matmul(a, b, mode="ieee", out=c)
