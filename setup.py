"""Build hook for the optional compiled kernels; everything else is in pyproject.toml.

``fermion.format.kernels`` (CRC_BLOCKS checksums, docs/FORMAT.md; the writer's
FLOAT_DECIMAL exponent trials) and
``fermion.io.preads`` (coalesced preads of many small ranges) are built where a C compiler
and the Python headers are present; without them the install still succeeds and
fermion.format.encoding.pages, decimal_floats and fermion.io.source do the same work in Python.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "fermion.format.kernels",
            ["fermion/format/kernels.c"],
            extra_compile_args=["-O3"],
            libraries=["m"],
            optional=True,
        ),
        Extension(
            "fermion.io.preads",
            ["fermion/io/preads.c"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
    ]
)
