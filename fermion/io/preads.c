/* Compiled reads of many small ranges of a local file (fermion/io/source.py):
 * ``LocalSource.read_copies`` asks for hundreds of page heads and zstd frames per batch
 * lookup, and in Python each one costs a coalescing step, a pread call and a slice. Here
 * the ranges are coalesced by the same rule as fermion/io/coalesce.py, every merged read
 * is made by pread(2) with the GIL released, and each range's bytes are copied out.
 * The module is optional: fermion/io/source.py does the same in Python without it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    int64_t offset, length;
    Py_ssize_t index; /* in the caller's list */
    Py_ssize_t read;  /* the merged read serving it */
} range_t;

static int by_offset(const void *a, const void *b)
{
    const range_t *x = (const range_t *)a, *y = (const range_t *)b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index); /* stable, as sorted() */
}

/* pread_ranges(fd, size, ranges, max_gap, max_read) -> (list[bytes], requests,
 * bytes_read): the bytes of each (offset, length) pair of the sequence ``ranges``. Ranges
 * sorted by offset are merged while the gap to the read being grown is at most max_gap
 * and the grown read stays within max_read bytes (fermion/io/coalesce.py's rule); each
 * merged read of at least one byte is one pread (retried on EINTR and short reads) and
 * one request. ValueError for a range outside [0, size) (the caller checks the ranges
 * first, to name the file); OSError when a read fails, EIO when the file ends early. */
static PyObject *pread_ranges(PyObject *self, PyObject *args)
{
    int fd;
    long long size, max_gap, max_read;
    PyObject *given;
    if (!PyArg_ParseTuple(args, "iLOLL:pread_ranges", &fd, &size, &given, &max_gap,
                          &max_read))
        return NULL;
    PyObject *seq = PySequence_Fast(given, "ranges must be a sequence of (offset, length)");
    if (seq == NULL)
        return NULL;
    PyObject *result = NULL, *out = NULL;
    range_t *ranges = NULL;
    int64_t *starts = NULL, *ends = NULL;
    char *buf = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    ranges = PyMem_Malloc(sizeof(range_t) * (n ? n : 1));
    starts = PyMem_Malloc(sizeof(int64_t) * (n ? n : 1)); /* merged reads, in order */
    ends = PyMem_Malloc(sizeof(int64_t) * (n ? n : 1));
    if (ranges == NULL || starts == NULL || ends == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long offset, length;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "LL:range", &offset, &length))
            goto done;
        ranges[i].offset = offset;
        ranges[i].length = length;
        ranges[i].index = i;
        if (offset < 0 || length < 0 || offset > size - length) {
            PyErr_Format(PyExc_ValueError, "range %zd lies outside the file", i);
            goto done;
        }
    }
    qsort(ranges, (size_t)n, sizeof(range_t), by_offset);
    /* coalesce: merged read m covers [starts[m], ends[m]); total bytes of all of them */
    Py_ssize_t merged = 0;
    int64_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t off = ranges[i].offset, stop = off + ranges[i].length;
        if (merged) {
            int64_t end = ends[merged - 1], grown = stop > end ? stop : end;
            if (off - end <= max_gap && grown - starts[merged - 1] <= max_read) {
                total += grown - end;
                ends[merged - 1] = grown;
                ranges[i].read = merged - 1;
                continue;
            }
        }
        ranges[i].read = merged;
        starts[merged] = off;
        ends[merged] = stop;
        total += stop - off;
        merged++;
    }
    buf = PyMem_Malloc((size_t)(total ? total : 1));
    if (buf == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t requests = 0;
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t at = 0;
    for (Py_ssize_t m = 0; m < merged && !err; m++) {
        int64_t want = ends[m] - starts[m], got = 0;
        if (want > 0)
            requests++;
        while (got < want) {
            ssize_t r = pread(fd, buf + at + got, (size_t)(want - got), (off_t)(starts[m] + got));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                err = r < 0 ? errno : EIO;
                break;
            }
            got += r;
        }
        at += want;
    }
    Py_END_ALLOW_THREADS
    if (err) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
        goto done;
    }
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    /* the merged reads lie back to back in buf: turn starts[] into their positions
     * there minus their file offsets (ends[] is no longer needed) */
    int64_t base = 0;
    for (Py_ssize_t k = 0; k < merged; k++) {
        int64_t length = ends[k] - starts[k];
        ends[k] = base - starts[k];
        base += length;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PyBytes_FromStringAndSize(buf + ranges[i].offset + ends[ranges[i].read],
                                                (Py_ssize_t)ranges[i].length);
        if (b == NULL)
            goto done;
        PyList_SET_ITEM(out, ranges[i].index, b);
    }
    result = Py_BuildValue("(OnL)", out, requests, (long long)total);
done:
    Py_XDECREF(out);
    PyMem_Free(buf);
    PyMem_Free(ranges);
    PyMem_Free(starts);
    PyMem_Free(ends);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef methods[] = {
    {"pread_ranges", pread_ranges, METH_VARARGS,
     "pread_ranges(fd, size, ranges, max_gap, max_read) -> (list[bytes], requests, bytes_read)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "preads",
    "Coalesced preads of many small ranges of a local file (fermion/io/source.py).\n"
    "\n"
    "Example:\n"
    "    >>> import os, tempfile\n"
    "    >>> from fermion.io import preads\n"
    "    >>> fd, path = tempfile.mkstemp()\n"
    "    >>> _ = os.write(fd, b\"0123456789\")\n"
    "    >>> preads.pread_ranges(fd, 10, [(8, 2), (0, 2), (3, 1)], 1, 1 << 20)\n"
    "    ([b'89', b'01', b'3'], 2, 6)\n"
    "    >>> os.close(fd); os.unlink(path)\n",
    -1, methods,
};

PyMODINIT_FUNC PyInit_preads(void) { return PyModule_Create(&module); }
