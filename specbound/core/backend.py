"""The seam for the few heavy linear-algebra calls: numpy (the default) or torch, on the CPU or a GPU.

Everything above this module is plain numpy on small arrays (formulas, thresholds, norms of a few
thousand numbers); the calls that cost time go through a :class:`Backend` with one small method set,
as einops' ``_backends.py`` does: batched QR (its R factor), singular values of the small cores, the
Gram product of a feed-forward matrix, the symmetric eigen-solve of that Gram matrix, and the
products behind the entrywise norms. Every backend computes in float64: the point of specbound is
exact spectra, so a GPU is used for its float64 throughput, never by casting to half precision.

* ``numpy``: numpy's own LAPACK and BLAS, exactly the calls the package always made (a BERT-family
  profile is bit for bit the same as before the seam existed), except one call: a symmetric
  eigen-solve of order 2048 or more (the Gram matrices of a 7B-class decoder's feed-forward matrices)
  goes through torch's LAPACK when torch is installed, which is several times faster there
  (:func:`large_eigvalsh`). That hand-off is a recorded choice of the spec
  (:attr:`BackendSpec.large_eigen`), and what computed an analysis says so
  (:meth:`BackendSpec.label_for`: "numpy+torch-eigh").
* ``torch``: ``torch.linalg`` on ``device`` ("cpu", "cuda", "cuda:1", ...). On the CPU this is the
  LAPACK torch ships with (MKL on x86), whose symmetric eigen-solver is several times faster than
  the reference algorithm on the large Gram matrices of a 7B-class model; on a CUDA device it is
  cuSOLVER. Results agree with numpy's to rounding (tested to 1e-12 of σ₁ on the CPU).

Arrays cross the seam as numpy arrays; :meth:`Backend.array` moves one to the backend once and the
caller keeps the handle for the several calls on it.
"""

from __future__ import annotations

import contextlib
import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .errors import SpecboundError
from .threads import serial_blas, torch_threads

BackendName = Literal["numpy", "torch"]
#: The backends by name, for the CLI's ``--backend`` and the ``backend=`` keyword.
BACKENDS: tuple[BackendName, ...] = ("numpy", "torch")
#: The default backend and device.
DEFAULT_BACKEND: BackendName = "numpy"
DEFAULT_DEVICE = "cpu"


class BackendError(SpecboundError):
    """A backend or device that cannot be used here (torch missing, no CUDA device, ...)."""


@dataclass(frozen=True)
class BackendSpec:
    """Which backend and device, and which library solves the large symmetric eigenproblems: the one
    value the CLI, ``load_profile`` and the cache key pass around."""

    name: BackendName = DEFAULT_BACKEND
    device: str = DEFAULT_DEVICE
    #: The library that solves a symmetric eigenproblem of order LARGE_EIGEN_ORDER or more. None (the
    #: default) is resolved when the spec is made: torch's LAPACK for the numpy backend where torch is
    #: installed (several times faster there, :func:`large_eigvalsh`), else numpy's; torch for torch.
    large_eigen: BackendName | None = None

    def __post_init__(self) -> None:
        if self.name not in BACKENDS:
            raise BackendError(f"unknown backend '{self.name}' (choose one of {', '.join(BACKENDS)})")
        if self.name == "numpy" and self.device != "cpu":
            raise BackendError(f"the numpy backend runs on the CPU only, not on '{self.device}' (use --backend torch)")
        if self.large_eigen is None:
            solver: BackendName = "torch" if self.name == "torch" or _torch_installed() else "numpy"
            object.__setattr__(self, "large_eigen", solver)
        elif self.large_eigen not in BACKENDS:
            raise BackendError(f"unknown eigen-solver '{self.large_eigen}' (choose one of {', '.join(BACKENDS)})")
        if self.name == "torch" and self.large_eigen != "torch":
            raise BackendError("the torch backend solves its eigenproblems itself")

    @property
    def label(self) -> str:
        return self.name if self.name == "numpy" else f"{self.name}:{self.device}"

    def eigen_solver(self, order: int) -> BackendName:
        """The library that solves a symmetric eigenproblem of this order."""
        return (self.large_eigen or self.name) if order >= LARGE_EIGEN_ORDER else self.name

    def label_for(self, eigen_order: int) -> str:
        """What computes an analysis whose symmetric eigenproblems have order ``eigen_order``: the
        :attr:`label`, and the library of the eigen-solves where it is not the backend's own
        ("numpy+torch-eigh"). Below LARGE_EIGEN_ORDER (every BERT-family model) it is the label."""
        solver = self.eigen_solver(eigen_order)
        return self.label if solver == self.name else f"{self.label}+{solver}-eigh"


def _torch_installed() -> bool:
    """Whether torch can be imported, without importing it (which takes seconds)."""
    return importlib.util.find_spec("torch") is not None


class Backend(ABC):
    """The heavy calls, float64 throughout. ``T`` is the backend's array type (numpy or torch).

    The capabilities say what a caller may do around the seam; callers ask them, never the name.
    """

    spec: BackendSpec
    #: Its arrays are the caller's numpy arrays and its products numpy's own, so a caller may form
    #: small products with numpy directly and get this backend's result (the whole-product norms of
    #: :func:`specbound.core.factored.head_spectra`).
    host_products: bool = False
    #: It takes a Gram matrix accumulated in host memory from blocks of a memory-mapped matrix
    #: (:func:`specbound.core.spectrum.gram_by_blocks`), so a large feed-forward matrix is never held whole.
    reads_mapped_blocks: bool = False
    #: Its heavy calls run on the calling thread and release the GIL, so small layers are analysed in
    #: threads side by side (:func:`specbound.core.engine.default_workers`).
    layers_in_threads: bool = False

    @abstractmethod
    def array(self, a: np.ndarray) -> Any:
        """The backend's float64 array holding ``a`` (no copy where the backend can share memory)."""

    @abstractmethod
    def numpy(self, t: Any) -> np.ndarray:
        """A numpy float64 array of ``t``."""

    @abstractmethod
    def qr_r(self, t: Any) -> Any:
        """R of the reduced QR of each matrix of a batch (..., n, r) -> (..., min(n, r), r)."""

    @abstractmethod
    def svdvals(self, t: Any) -> Any:
        """Singular values of each matrix of a batch, descending."""

    @abstractmethod
    def eigvalsh(self, t: Any) -> Any:
        """Eigenvalues of a symmetric matrix, ascending."""

    @abstractmethod
    def gram(self, matrix: Any) -> Any:
        """M M^T or M^T M, whichever is smaller: (min(n, m), min(n, m))."""

    @abstractmethod
    def matmul(self, a: Any, b: Any) -> Any:
        """Batched matrix product."""

    @abstractmethod
    def transpose(self, t: Any) -> Any:
        """Swap the last two axes (a view)."""

    @abstractmethod
    def column_norm_sum(self, t: Any) -> Any:
        """Σ_j ‖t[..., :, j]‖₂ over the last axis, batched over the leading ones."""

    @abstractmethod
    def abs_sum(self, t: Any) -> float:
        """Σ |t_ij| of one matrix."""

    @abstractmethod
    def take(self, t: Any, index: np.ndarray) -> Any:
        """t[index] along the first axis."""

    @contextlib.contextmanager
    def serial_lapack(self) -> Iterator[None]:
        """Context for the small LAPACK calls (see :mod:`specbound.core.spectrum`); nothing by default."""
        yield

    def synchronize(self) -> None:  # noqa: B027  # a no-op except on a device with a queue
        """Wait for queued device work (a GPU's), so that timings and peaks are true."""


#: Largest batch the numpy backend's QR copies whole (see :meth:`NumpyBackend.qr_r`).
QR_BATCH_BYTES: int = 32 * 1024**2

#: Order from which a symmetric eigenproblem goes to the spec's :attr:`~BackendSpec.large_eigen` (a
#: feed-forward Gram matrix of a 7B-class decoder is 4096 x 4096; every BERT-family one is <= 1024).
LARGE_EIGEN_ORDER: int = 2048


def large_eigvalsh(t: np.ndarray) -> np.ndarray:
    """Eigenvalues of a large symmetric float64 matrix through torch's LAPACK on one thread.

    Half of the tridiagonal reduction behind every symmetric eigen-solve is memory-bound, and the
    reference implementation numpy's OpenBLAS ships does it 2.7 times slower than MKL, which torch
    links on x86: 7.1 s against 2.6 s for a 4096 x 4096 Gram matrix on one core, the eigenvalues
    agreeing to 1e-14 of the largest. On one thread (as numpy's own eigen-solves run) because
    OpenMP's waiting threads cost CPU time whenever another process shares the cores. Only the lower
    triangle is read (as numpy's ``eigvalsh`` does), and the input is shared with torch, not copied
    (LAPACK works on its own copy, as numpy's does).
    """
    try:
        import torch
    except ImportError:
        raise BackendError("large eigen-solves through torch need PyTorch, which cannot be imported") from None
    with torch_threads(1):
        if t.flags.f_contiguous and not t.flags.c_contiguous:  # its transpose is C-ordered: no copy
            values: np.ndarray = torch.linalg.eigvalsh(torch.from_numpy(t.T), UPLO="U").numpy()
        else:
            values = torch.linalg.eigvalsh(torch.from_numpy(np.ascontiguousarray(t))).numpy()
    return values


class NumpyBackend(Backend):
    """numpy's LAPACK and BLAS; the large eigen-solves through the spec's ``large_eigen`` (by default
    torch's LAPACK where it is installed)."""

    host_products = reads_mapped_blocks = layers_in_threads = True

    def __init__(self, spec: BackendSpec | None = None) -> None:
        self.spec = spec if spec is not None else BackendSpec()
        if self.spec.name != "numpy":
            raise BackendError(f"the numpy backend cannot run the spec of '{self.spec.name}'")

    def array(self, a: np.ndarray) -> np.ndarray:
        return a

    def numpy(self, t: np.ndarray) -> np.ndarray:
        return np.asarray(t, dtype=np.float64)

    def qr_r(self, t: np.ndarray) -> np.ndarray:
        """R of each matrix of a batch. numpy copies the whole batch before LAPACK overwrites it, so a
        batch larger than QR_BATCH_BYTES (the 32 query heads of a 7B-class layer: 134 MB) is
        factored one matrix at a time; LAPACK's result for each matrix is the same either way."""
        if t.ndim > 2 and t.nbytes > QR_BATCH_BYTES:
            return np.stack([self.qr_r(t[i]) for i in range(t.shape[0])])
        r: np.ndarray = np.linalg.qr(t, mode="r")  # type: ignore[assignment]  # mode "r" returns R alone
        return r

    def svdvals(self, t: np.ndarray) -> np.ndarray:
        return np.linalg.svd(t, compute_uv=False)

    def eigvalsh(self, t: np.ndarray) -> np.ndarray:
        """numpy's eigen-solve, or torch's LAPACK for one matrix of an order the spec hands to torch
        (:meth:`BackendSpec.eigen_solver`, :func:`large_eigvalsh`)."""
        if t.ndim == 2 and self.spec.eigen_solver(t.shape[-1]) == "torch":
            return large_eigvalsh(t)
        return np.linalg.eigvalsh(t)

    def gram(self, matrix: np.ndarray) -> np.ndarray:
        n, m = matrix.shape
        result: np.ndarray = matrix @ matrix.T if n <= m else matrix.T @ matrix  # (min(n, m), min(n, m)): BLAS syrk
        return result

    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        result: np.ndarray = a @ b
        return result

    def transpose(self, t: np.ndarray) -> np.ndarray:
        return np.swapaxes(t, -1, -2)

    def column_norm_sum(self, t: np.ndarray) -> np.ndarray:
        result: np.ndarray = np.linalg.norm(t, axis=-2).sum(axis=-1)
        return result

    def abs_sum(self, t: np.ndarray) -> float:
        return float(np.abs(t).sum())

    def take(self, t: np.ndarray, index: np.ndarray) -> np.ndarray:
        result: np.ndarray = t[index]
        return result

    @contextlib.contextmanager
    def serial_lapack(self) -> Iterator[None]:
        """BLAS (and so LAPACK) on one thread (:func:`specbound.core.threads.serial_blas`)."""
        with serial_blas():
            yield


class TorchBackend(Backend):
    def __init__(self, device: str = DEFAULT_DEVICE) -> None:
        try:
            import torch
        except ImportError:  # pragma: no cover - torch is a dependency of the package
            raise BackendError("the torch backend needs PyTorch, which is not installed") from None
        try:
            self._device = torch.device(device)
        except (RuntimeError, TypeError):
            raise BackendError(f"'{device}' is not a torch device (try cpu or cuda)") from None
        if self._device.type == "cuda" and not torch.cuda.is_available():
            raise BackendError(f"no CUDA device is available for '{device}' (this PyTorch has CUDA: {_has_cuda()})")
        if self._device.type not in ("cpu", "cuda"):
            raise BackendError(f"device '{device}' is not supported (use cpu or cuda)")
        self._torch = torch
        self.spec = BackendSpec("torch", str(self._device))

    def array(self, a: np.ndarray) -> Any:
        t = self._torch.from_numpy(np.asarray(a, dtype=np.float64))
        return t.to(self._device) if self._device.type != "cpu" else t

    def numpy(self, t: Any) -> np.ndarray:
        result: np.ndarray = t.detach().to("cpu").numpy().astype(np.float64, copy=False)
        return result

    def qr_r(self, t: Any) -> Any:
        return self._torch.linalg.qr(t, mode="r")[1]

    def svdvals(self, t: Any) -> Any:
        return self._torch.linalg.svdvals(t)

    def eigvalsh(self, t: Any) -> Any:
        return self._torch.linalg.eigvalsh(t)

    def gram(self, matrix: Any) -> Any:
        n, m = matrix.shape
        return matrix @ matrix.T if n <= m else matrix.T @ matrix

    def matmul(self, a: Any, b: Any) -> Any:
        return a @ b

    def transpose(self, t: Any) -> Any:
        return t.transpose(-1, -2)

    def column_norm_sum(self, t: Any) -> Any:
        return self._torch.linalg.vector_norm(t, dim=-2).sum(dim=-1)

    def abs_sum(self, t: Any) -> float:
        return float(t.abs().sum())

    def take(self, t: Any, index: np.ndarray) -> Any:
        return t[self._torch.from_numpy(np.asarray(index, dtype=np.int64)).to(t.device)]

    def synchronize(self) -> None:
        if self._device.type == "cuda":
            self._torch.cuda.synchronize(self._device)


def _has_cuda() -> str:
    import torch

    return "yes" if torch.version.cuda else "no, a CPU-only build"


_NUMPY = NumpyBackend()


def get_backend(spec: BackendSpec | str | None = None, device: str | None = None) -> Backend:
    """The backend for a spec, a name (with ``device``) or None (the default, numpy)."""
    if spec is None or isinstance(spec, str):
        spec = BackendSpec(spec or DEFAULT_BACKEND, device or DEFAULT_DEVICE)  # type: ignore[arg-type]
    if spec.name == "numpy":
        return _NUMPY if spec == _NUMPY.spec else NumpyBackend(spec)
    return TorchBackend(spec.device)
