/* Spike for issue #33: a native post/poll loop driven with the raw ibv_qp* / ibv_cq* of pyverbs objects.
 *
 * A plain CPython extension (no Cython, no cffi runtime): needs only gcc, Python.h and <infiniband/verbs.h>
 * (libibverbs-dev) at build time. It does NOT link libibverbs: ibv_post_send() and ibv_poll_cq() are static
 * inline in verbs.h and jump through qp->context->ops, so the provider pyverbs loaded is the one called.
 *
 *   run_write(qp, cq, laddr, lkey, raddr, rkey, size, seconds, batch, signal_every, sq_depth)
 *       -> (wrs, seconds, posts, polls, error_status, wrs_drained)
 *   Posts RDMA WRITEs of `size` bytes on one connected RC/UC QP in chains of `batch` WRs (one post_send per
 *   chain; batch 1 = single WRs), signals the WR that ends every `signal_every` WRs (a multiple of batch), keeps
 *   at most `sq_depth` WRs outstanding, polls `cq` 64 completions at a time, for `seconds`. `wrs` counts the WRs
 *   known complete at the deadline (every WR up to the last signalled one that completed). After the deadline
 *   it posts up to the next signalled WR and drains, so the QP is quiet when it returns. The GIL is released.
 *
 *   fake() -> (qp, cq): a fake provider in C (ops.post_send walks the chain and queues a completion per
 *   signalled WR, ops.poll_cq hands them back), for the loop's own ceiling without a device.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POLL_BATCH 64
#define MAX_BATCH 256

static inline uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static PyObject *run_write(PyObject *self, PyObject *args)
{
    unsigned long long qpp, cqp, laddr, raddr;
    unsigned int lkey, rkey, size;
    double seconds;
    int batch, every, depth;
    if (!PyArg_ParseTuple(args, "KKKIKIIdiii", &qpp, &cqp, &laddr, &lkey, &raddr, &rkey, &size, &seconds,
                          &batch, &every, &depth))
        return NULL;
    if (batch < 1 || batch > MAX_BATCH || every < batch || every % batch || every > depth) {
        PyErr_SetString(PyExc_ValueError, "need 1 <= batch <= 256, signal_every a multiple of batch, <= sq_depth");
        return NULL;
    }
    struct ibv_qp *qp = (struct ibv_qp *)(uintptr_t)qpp;
    struct ibv_cq *cq = (struct ibv_cq *)(uintptr_t)cqp;
    struct ibv_sge sge[MAX_BATCH];
    struct ibv_send_wr wr[MAX_BATCH], *bad;
    struct ibv_wc wc[POLL_BATCH];
    memset(wr, 0, sizeof(wr));
    for (int i = 0; i < batch; i++) {
        sge[i].addr = laddr;
        sge[i].length = size;
        sge[i].lkey = lkey;
        wr[i].sg_list = &sge[i];
        wr[i].num_sge = 1;
        wr[i].opcode = IBV_WR_RDMA_WRITE;
        wr[i].wr.rdma.remote_addr = raddr;
        wr[i].wr.rdma.rkey = rkey;
        wr[i].next = i + 1 < batch ? &wr[i + 1] : NULL;
    }
    uint64_t seq = 0, done = 0, posts = 0, polls = 0, at_deadline = 0, it = 0;
    int err = 0, ret = 0;
    uint64_t t0, t1 = 0, deadline;
    Py_BEGIN_ALLOW_THREADS
    t0 = now_ns();
    deadline = t0 + (uint64_t)(seconds * 1e9);
    int stopping = 0;
    for (;;) {
        if (!stopping && (++it & 15) == 0 && now_ns() >= deadline) {
            stopping = 1;
            t1 = now_ns();
            at_deadline = done;
        }
        /* after the deadline: post only up to the next signalled WR, then drain */
        int may_post = !stopping || seq % (uint64_t)every != 0;
        if (may_post && seq - done + (uint64_t)batch <= (uint64_t)depth) {
            uint64_t end = seq + (uint64_t)batch;
            struct ibv_send_wr *last = &wr[batch - 1];
            last->wr_id = end;
            last->send_flags = end % (uint64_t)every == 0 ? IBV_SEND_SIGNALED : 0;
            ret = ibv_post_send(qp, wr, &bad);
            if (ret) {
                err = -ret;
                break;
            }
            seq = end;
            posts++;
        }
        int n = ibv_poll_cq(cq, POLL_BATCH, wc);
        polls++;
        if (n < 0) {
            err = -1000;
            break;
        }
        for (int i = 0; i < n; i++) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                err = (int)wc[i].status;
                break;
            }
            done = wc[i].wr_id;
        }
        if (err)
            break;
        if (stopping && done == seq)
            break;
    }
    if (!t1) {
        t1 = now_ns();
        at_deadline = done;
    }
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(KdKKiK)", (unsigned long long)at_deadline, (double)(t1 - t0) / 1e9,
                         (unsigned long long)posts, (unsigned long long)polls, err, (unsigned long long)done);
}

/* ---- a fake provider in C: the loop's ceiling without a device ---------------------------------------- */
struct fake {
    struct ibv_context ctx;
    struct ibv_qp qp;
    struct ibv_cq cq;
    uint64_t ring[4096];
    unsigned head, tail;
};

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *w, struct ibv_send_wr **bad)
{
    struct fake *f = (struct fake *)((char *)qp - offsetof(struct fake, qp));
    for (; w; w = w->next)
        if (w->send_flags & IBV_SEND_SIGNALED)
            f->ring[f->tail++ & 4095] = w->wr_id;
    return 0;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    struct fake *f = (struct fake *)((char *)cq - offsetof(struct fake, cq));
    int k = 0;
    while (k < n && f->head != f->tail) {
        memset(&wc[k], 0, sizeof(wc[k]));
        wc[k].wr_id = f->ring[f->head++ & 4095];
        wc[k].status = IBV_WC_SUCCESS;
        wc[k].opcode = IBV_WC_RDMA_WRITE;
        k++;
    }
    return k;
}

static PyObject *fake(PyObject *self, PyObject *noargs)
{
    struct fake *f = calloc(1, sizeof(*f)); /* leaked on purpose: a spike */
    if (!f)
        return PyErr_NoMemory();
    f->ctx.ops.post_send = fake_post_send;
    f->ctx.ops.poll_cq = fake_poll_cq;
    f->qp.context = &f->ctx;
    f->qp.send_cq = &f->cq;
    f->cq.context = &f->ctx;
    return Py_BuildValue("(KK)", (unsigned long long)(uintptr_t)&f->qp, (unsigned long long)(uintptr_t)&f->cq);
}

/* ---- read a few fields of the raw structs (to cross-check a handle in C, not only with ctypes) ---------- */
static PyObject *qp_info(PyObject *self, PyObject *args)
{
    unsigned long long p;
    if (!PyArg_ParseTuple(args, "K", &p))
        return NULL;
    struct ibv_qp *qp = (struct ibv_qp *)(uintptr_t)p;
    return Py_BuildValue("{s:K,s:K,s:K,s:I,s:i,s:i}", "context", (unsigned long long)(uintptr_t)qp->context,
                         "pd", (unsigned long long)(uintptr_t)qp->pd, "send_cq",
                         (unsigned long long)(uintptr_t)qp->send_cq, "qp_num", qp->qp_num, "state", (int)qp->state,
                         "qp_type", (int)qp->qp_type);
}

static PyMethodDef methods[] = {
    {"run_write", run_write, METH_VARARGS, "post RDMA WRITEs and poll completions natively for some seconds"},
    {"fake", fake, METH_NOARGS, "a fake provider's (qp, cq) raw pointers"},
    {"qp_info", qp_info, METH_VARARGS, "a few fields of a struct ibv_qp"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native_loop", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native_loop(void) { return PyModule_Create(&module); }
