/* collie's native traffic loop: the measured interval of a verbs worker without a Python call per WR.
 *
 * A plain CPython extension (no Cython, no cffi). It includes <infiniband/verbs.h> (libibverbs-dev) but does
 * NOT link libibverbs: ibv_post_send(), ibv_post_recv() and ibv_poll_cq() are static inline there and call
 * through qp->context->ops / cq->context->ops, i.e. into the provider pyverbs already loaded. Resources stay
 * pyverbs objects; this module gets their raw ibv_qp / ibv_cq / ibv_ah pointers (see native.py) and builds its
 * own ibv_send_wr / ibv_recv_wr chains from plain descriptions, so it owns every WR it posts.
 *
 * The loop mirrors engine.py's Python loop (the reference it is tested against), per QP:
 *   seq       WRs posted;  done  WRs known complete (every WR up to a signalled one that completed);
 *   a FIFO of the signalled WRs (sequence end, post time): completions arrive in order per send queue, so
 *   its head gives `done` and the completion latency;
 *   a chain of `batch` WRs is posted when seq - done + batch <= sq_depth; WR seq is signalled when
 *   (seq + 1) % signal_every == 0, and the last of a chain too when the unsignalled tail would leave no room
 *   for another chain (plan.signal_positions; the same invariant: no deadlock).
 * Receive queues are refilled in post lists of recv_batch, at once or recv_delay_ns after the room was seen.
 * Every loop releases the GIL; Python runs between the phases (the interval's edges, counter reads).
 *
 * Also here: a fake provider (fake_*), a device in C that completes every WR at once and, when asked, moves
 * the data (WRITE, READ, SEND, atomics, UD) within this process, for tests and for the loop's own ceiling.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef COLLIE_NATIVE_SOURCE /* native_build stamps the SHA-256 of this file's text (its first 16 hex digits) */
#define COLLIE_NATIVE_SOURCE "unknown"
#endif

#define POLL_BATCH 64
#define TIMED_EVERY 16
#define MAX_ERRS 16
#define MAX_NOTES 8
#define IDLE_SLEEP_NS 500000

static inline uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec t = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    nanosleep(&t, NULL);
}

/* ---- records ---------------------------------------------------------------------------------------------- */
typedef struct {
    uint64_t seq_end, t;
} sig_t_;

typedef struct {
    struct ibv_qp *qp;
    uint32_t qpn;
    int run, dead;
    uint32_t first_chain, nchains, chain;
    uint64_t seq, done, sig_last;
    sig_t_ *fifo;
    uint32_t head, count, cap;
} sqp_t;

typedef struct {
    struct ibv_qp *qp;
    uint32_t qpn;
    int run, dead;
    int64_t outstanding;
    uint64_t due;
} rqp_t;

typedef struct {
    struct ibv_send_wr *wrs;
    struct ibv_sge *sges;
    int n;
} chain_t;

typedef struct {
    uint32_t status, vendor_err;
    uint64_t n;
} err_t;

typedef struct {
    int kind; /* 0 post_send, 1 post_recv, 2 poll_cq */
    int err;
} note_t;

typedef struct {
    int batch, every, depth, static_signal, recv_batch, rq_depth, grh;
    uint64_t recv_delay_ns;
    struct ibv_cq **scqs, **rcqs;
    int nscq, nrcq;
    int *sq;  /* indices of the run's send QPs (finish) */
    int *pos; /* scratch: the signalled positions of the chain being posted (batch + 1 entries) */
    int nsq;
    struct ibv_recv_wr *rwrs;
    struct ibv_sge *rsges;
    int nrwr;
    uint64_t loops, full, rx_wrs, rx_bytes, rx_total;
    uint64_t *lat;
    size_t nlat;
    err_t errs[MAX_ERRS];
    int nerrs;
    note_t notes[MAX_NOTES];
    int nnotes;
} run_t;

typedef struct {
    PyObject_HEAD
    run_t *runs;
    int nruns;
    sqp_t *sqps;
    int nsqp, capsqp;
    rqp_t *rqps;
    int nrqp, caprqp;
    chain_t *chains;
    int nchains, capchains;
    uint64_t *table; /* qpn -> (kind << 32 | index) + 1, open addressing; 0 = empty */
    uint32_t tmask;
    size_t max_lat;
    int measuring, dead;
    uint64_t timed_total, timed_verbs;
    uint64_t it;
} Loop;

static int grow(void **arr, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return 0;
    int n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, (size_t)n * size);
    if (!p)
        return -1;
    memset((char *)p + (size_t)*cap * size, 0, (size_t)(n - *cap) * size);
    *arr = p;
    *cap = n;
    return 0;
}

static void note(run_t *r, int kind, int err)
{
    if (r->nnotes < MAX_NOTES) {
        r->notes[r->nnotes].kind = kind;
        r->notes[r->nnotes].err = err;
    }
    r->nnotes++;
}

static void wc_error(run_t *r, const struct ibv_wc *wc)
{
    if (wc->status == IBV_WC_WR_FLUSH_ERR)
        return; /* the consequence of an earlier error on the same QP, not a cause */
    for (int i = 0; i < r->nerrs; i++)
        if (r->errs[i].status == (uint32_t)wc->status && r->errs[i].vendor_err == wc->vendor_err) {
            r->errs[i].n++;
            return;
        }
    if (r->nerrs < MAX_ERRS) {
        r->errs[r->nerrs].status = (uint32_t)wc->status;
        r->errs[r->nerrs].vendor_err = wc->vendor_err;
        r->errs[r->nerrs].n = 1;
        r->nerrs++;
    }
}

/* ---- qpn lookup ------------------------------------------------------------------------------------------- */
static int table_build(Loop *L)
{
    for (int ri = 0; ri < L->nruns; ri++) {
        run_t *r = &L->runs[ri];
        free(r->sq);
        r->sq = malloc((size_t)(L->nsqp ? L->nsqp : 1) * sizeof(int));
        if (!r->sq)
            return -1;
        r->nsq = 0;
        for (int i = 0; i < L->nsqp; i++)
            if (L->sqps[i].run == ri)
                r->sq[r->nsq++] = i;
    }
    uint32_t n = 16;
    while (n < 2u * (uint32_t)(L->nsqp + L->nrqp) + 2)
        n *= 2;
    free(L->table);
    L->table = calloc(n, sizeof(uint64_t));
    if (!L->table)
        return -1;
    L->tmask = n - 1;
    for (int kind = 0; kind < 2; kind++) {
        int count = kind ? L->nrqp : L->nsqp;
        for (int i = 0; i < count; i++) {
            uint32_t qpn = kind ? L->rqps[i].qpn : L->sqps[i].qpn;
            uint32_t h = (qpn * 2654435761u) & L->tmask;
            while (L->table[h])
                h = (h + 1) & L->tmask;
            L->table[h] = (((uint64_t)kind << 32) | (uint64_t)i) + 1;
        }
    }
    return 0;
}

/* The index of the send (kind 0) or receive (kind 1) QP with this number, -1 if none. */
static inline int lookup(const Loop *L, uint32_t qpn, int kind)
{
    uint32_t h = (qpn * 2654435761u) & L->tmask;
    for (uint64_t v; (v = L->table[h]); h = (h + 1) & L->tmask) {
        uint64_t e = v - 1;
        int k = (int)(e >> 32), i = (int)(e & 0xffffffffu);
        uint32_t q = k ? L->rqps[i].qpn : L->sqps[i].qpn;
        if (q == qpn && k == kind)
            return i;
    }
    return -1;
}

/* ---- posting ---------------------------------------------------------------------------------------------- */
static inline void fifo_push(sqp_t *q, uint64_t seq_end, uint64_t t)
{
    if (q->count == q->cap) { /* never expected: cap is sq_depth + 1; drop the oldest rather than overrun */
        q->head = (q->head + 1) % q->cap;
        q->count--;
    }
    sig_t_ *s = &q->fifo[(q->head + q->count) % q->cap];
    s->seq_end = seq_end;
    s->t = t;
    q->count++;
}

static inline int fifo_pop(sqp_t *q, sig_t_ *out)
{
    if (!q->count)
        return 0;
    *out = q->fifo[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    return 1;
}

/* Post the next chain on q (force_last: its last WR signalled too). 1 posted, 0 failed (the QP is dead). The clock
 * is read (the post time of its signalled WRs, for their latency) only when the chain has a signalled WR. */
static int post(Loop *L, sqp_t *q, int force_last)
{
    run_t *r = &L->runs[q->run];
    chain_t *c = &L->chains[q->first_chain + q->chain];
    int batch = r->batch, every = r->every;
    uint64_t seq0 = q->seq;
    int *pos = r->pos;
    int npos = 0, nsig = 0;
    if (r->static_signal) {
        nsig = batch / every;
    } else {
        int first = (int)((uint64_t)(every - (int)((seq0 + 1) % (uint64_t)every)) % (uint64_t)every);
        for (int p = first; p < batch; p += every)
            pos[npos++] = p;
        uint64_t settled = npos ? seq0 + (uint64_t)pos[npos - 1] + 1 : q->sig_last;
        uint64_t tail = seq0 + (uint64_t)batch - settled;
        if ((tail && tail + (uint64_t)batch > (uint64_t)r->depth) || (force_last && (!npos || pos[npos - 1] != batch - 1)))
            pos[npos++] = batch - 1;
        nsig = npos;
    }
    for (int k = 0; k < npos; k++)
        c->wrs[pos[k]].send_flags |= IBV_SEND_SIGNALED;
    uint64_t now = nsig ? now_ns() : 0;
    struct ibv_send_wr *bad = NULL;
    int ret = ibv_post_send(q->qp, c->wrs, &bad);
    for (int k = 0; k < npos; k++)
        c->wrs[pos[k]].send_flags &= ~(unsigned int)IBV_SEND_SIGNALED;
    if (ret) {
        q->dead = 1;
        L->dead++;
        note(r, 0, ret);
        return 0;
    }
    if (npos) {
        for (int k = 0; k < npos; k++)
            fifo_push(q, seq0 + (uint64_t)pos[k] + 1, now);
        q->sig_last = seq0 + (uint64_t)pos[npos - 1] + 1;
    } else if (nsig) {
        for (int k = 1; k <= nsig; k++)
            fifo_push(q, seq0 + (uint64_t)k * (uint64_t)every, now);
        q->sig_last = seq0 + (uint64_t)nsig * (uint64_t)every;
    }
    q->seq = seq0 + (uint64_t)batch;
    q->chain = (q->chain + 1) % q->nchains;
    return 1;
}

/* ---- polling ---------------------------------------------------------------------------------------------- */
static int poll_send(Loop *L, int lat_on)
{
    struct ibv_wc wc[POLL_BATCH];
    int got = 0;
    for (int ri = 0; ri < L->nruns; ri++) {
        run_t *r = &L->runs[ri];
        for (int ci = 0; ci < r->nscq; ci++) {
            int n = ibv_poll_cq(r->scqs[ci], POLL_BATCH, wc);
            if (n <= 0) {
                if (n < 0)
                    note(r, 2, n);
                continue;
            }
            got += n;
            uint64_t now = now_ns();
            for (int k = 0; k < n; k++) {
                int i = lookup(L, wc[k].qp_num, 0);
                if (i < 0)
                    continue;
                sqp_t *q = &L->sqps[i];
                sig_t_ s;
                if (wc[k].status != IBV_WC_SUCCESS) {
                    wc_error(&L->runs[q->run], &wc[k]);
                    if (!q->dead) {
                        q->dead = 1;
                        L->dead++;
                    }
                    fifo_pop(q, &s);
                    continue;
                }
                if (!fifo_pop(q, &s))
                    continue;
                run_t *qr = &L->runs[q->run];
                if (lat_on && qr->nlat < L->max_lat)
                    qr->lat[qr->nlat++] = now - s.t;
                q->done = s.seq_end;
            }
        }
    }
    return got;
}

static void repost(Loop *L, rqp_t *q, uint64_t now)
{
    run_t *r = &L->runs[q->run];
    int chunk = r->recv_batch;
    uint64_t delay = r->recv_delay_ns;
    while (!q->dead && q->outstanding + chunk <= r->rq_depth) {
        if (delay) {
            if (!q->due)
                q->due = now + delay;
            if (now < q->due)
                return;
            q->due = 0;
        }
        struct ibv_recv_wr *bad = NULL;
        int ret = ibv_post_recv(q->qp, r->rwrs, &bad);
        if (ret) {
            q->dead = 1;
            note(r, 1, ret);
        } else {
            q->outstanding += chunk;
        }
        if (delay)
            return;
    }
}

static int poll_recv(Loop *L)
{
    struct ibv_wc wc[POLL_BATCH];
    int got = 0, paced = 0;
    for (int ri = 0; ri < L->nruns; ri++) {
        run_t *r = &L->runs[ri];
        if (!r->nrwr)
            continue;
        paced |= r->recv_delay_ns != 0;
        for (int ci = 0; ci < r->nrcq; ci++) {
            int n = ibv_poll_cq(r->rcqs[ci], POLL_BATCH, wc);
            if (n <= 0) {
                if (n < 0)
                    note(r, 2, n);
                continue;
            }
            got += n;
            uint64_t now = now_ns();
            for (int k = 0; k < n; k++) {
                int i = lookup(L, wc[k].qp_num, 1);
                if (i < 0)
                    continue;
                rqp_t *q = &L->rqps[i];
                q->outstanding--;
                if (wc[k].status != IBV_WC_SUCCESS) {
                    wc_error(r, &wc[k]);
                    q->dead = 1;
                    continue;
                }
                r->rx_total++;
                if (L->measuring) {
                    r->rx_wrs++;
                    r->rx_bytes += (uint64_t)wc[k].byte_len - (uint64_t)r->grh;
                }
                repost(L, q, now);
            }
        }
    }
    if (paced) {
        uint64_t now = now_ns();
        for (int i = 0; i < L->nrqp; i++) {
            rqp_t *q = &L->rqps[i];
            if (q->due && now >= q->due && L->runs[q->run].nrwr)
                repost(L, q, now);
        }
    }
    return got;
}

static inline int has_recv(const Loop *L)
{
    for (int i = 0; i < L->nruns; i++)
        if (L->runs[i].nrwr && L->runs[i].nrcq)
            return 1;
    return 0;
}

/* ---- the phases ------------------------------------------------------------------------------------------- */
/* Traffic until `until` (monotonic ns) or every send QP is dead. Returns 1 when all are dead. */
static int traffic(Loop *L, uint64_t until)
{
    int rx = has_recv(L);
    int measuring = L->measuring;
    if (now_ns() >= until)
        return 0;
    unsigned since = 0; /* posts since the deadline was last checked */
    for (;;) {
        /* the iteration is timed when measuring one iteration in TIMED_EVERY, and the deadline checked then and
         * whenever TIMED_EVERY posts went since the last check: a clock read costs more than a post on some
         * systems (an emulated guest's clocksource), and a post more than a clock read on others (rxe's kernel) */
        uint64_t now = 0;
        int timed = 0;
        int sampled = L->it++ % TIMED_EVERY == 0;
        if (sampled || since >= TIMED_EVERY) {
            since = 0;
            now = now_ns();
            if (now >= until)
                return 0;
            timed = measuring && sampled;
        }
        uint64_t verbs = 0, t1;
        /* post: every live QP with room for a chain, run by run */
        for (int ri = 0; ri < L->nruns; ri++) {
            run_t *r = &L->runs[ri];
            uint64_t room = (uint64_t)(r->depth - r->batch);
            int posted = 0;
            for (int k = 0; k < r->nsq; k++) {
                sqp_t *q = &L->sqps[r->sq[k]];
                if (q->dead || q->seq - q->done > room)
                    continue;
                if (timed) {
                    t1 = now_ns();
                    posted |= post(L, q, 0);
                    verbs += now_ns() - t1;
                } else {
                    posted |= post(L, q, 0);
                }
                since++;
            }
            if (measuring) {
                r->loops++;
                if (!posted)
                    r->full++;
            }
        }
        if (timed) {
            t1 = now_ns();
            poll_send(L, measuring);
            if (rx)
                poll_recv(L);
            uint64_t t2 = now_ns();
            L->timed_verbs += verbs + t2 - t1;
            L->timed_total += t2 - now;
        } else {
            poll_send(L, measuring);
            if (rx)
                poll_recv(L);
        }
        if (L->dead >= L->nsqp)
            return 1;
    }
}

/* Make the last WR of every live QP signalled (one more chain if needed), wait for all until `deadline`. */
static void drain(Loop *L, uint64_t deadline)
{
    int rx = has_recv(L);
    int left = 1;
    while (left && now_ns() < deadline) {
        left = 0;
        for (int i = 0; i < L->nsqp; i++) {
            sqp_t *q = &L->sqps[i];
            if (q->dead || q->seq <= q->sig_last)
                continue;
            run_t *r = &L->runs[q->run];
            if (q->seq - q->done + (uint64_t)r->batch <= (uint64_t)r->depth)
                post(L, q, 1);
            else
                left = 1;
        }
        poll_send(L, 0);
        if (rx)
            poll_recv(L);
    }
    while (now_ns() < deadline) {
        int busy = 0;
        for (int i = 0; i < L->nsqp && !busy; i++)
            busy = !L->sqps[i].dead && L->sqps[i].done < L->sqps[i].seq;
        if (!busy)
            break;
        poll_send(L, 0);
        if (rx)
            poll_recv(L);
    }
}

/* Receives only, until `until`; sleeps briefly after a poll that found nothing. */
static void serve(Loop *L, uint64_t until)
{
    int rx = has_recv(L);
    while (now_ns() < until) {
        if (!rx) {
            uint64_t left = until - now_ns();
            sleep_ns(left < 50000000ull ? left : 50000000ull);
        } else if (!poll_recv(L)) {
            sleep_ns(IDLE_SLEEP_NS);
        }
    }
}

/* ---- building from Python --------------------------------------------------------------------------------- */
static int fill_sges(PyObject *list, struct ibv_sge *out, int max)
{
    Py_ssize_t n = PySequence_Size(list);
    if (n < 0)
        return -1;
    if (n > max) {
        PyErr_SetString(PyExc_ValueError, "too many SGEs");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PySequence_GetItem(list, i);
        unsigned long long addr;
        unsigned int len, lkey;
        int ok = t && PyArg_ParseTuple(t, "KII", &addr, &len, &lkey);
        Py_XDECREF(t);
        if (!ok)
            return -1;
        out[i].addr = addr;
        out[i].length = len;
        out[i].lkey = lkey;
    }
    return (int)n;
}

static Py_ssize_t count_sges(PyObject *descs, int idx)
{
    Py_ssize_t total = 0, n = PySequence_Size(descs);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_GetItem(descs, i);
        if (!d)
            return -1;
        PyObject *s = PySequence_GetItem(d, idx);
        Py_DECREF(d);
        if (!s)
            return -1;
        Py_ssize_t k = PySequence_Size(s);
        Py_DECREF(s);
        if (k < 0)
            return -1;
        total += k;
    }
    return total;
}

static PyObject *Loop_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    int nruns;
    Py_ssize_t max_lat;
    if (!PyArg_ParseTuple(args, "in", &nruns, &max_lat))
        return NULL;
    if (nruns < 0 || max_lat < 0) {
        PyErr_SetString(PyExc_ValueError, "negative size");
        return NULL;
    }
    Loop *L = (Loop *)type->tp_alloc(type, 0);
    if (!L)
        return NULL;
    L->runs = calloc((size_t)(nruns ? nruns : 1), sizeof(run_t));
    if (!L->runs) {
        Py_DECREF(L);
        return PyErr_NoMemory();
    }
    L->nruns = nruns;
    L->max_lat = (size_t)max_lat;
    return (PyObject *)L;
}

static void Loop_dealloc(Loop *L)
{
    for (int i = 0; i < L->nruns; i++) {
        run_t *r = &L->runs[i];
        free(r->scqs);
        free(r->rcqs);
        free(r->sq);
        free(r->pos);
        free(r->rwrs);
        free(r->rsges);
        free(r->lat);
    }
    for (int i = 0; i < L->nchains; i++) {
        free(L->chains[i].wrs);
        free(L->chains[i].sges);
    }
    for (int i = 0; i < L->nsqp; i++)
        free(L->sqps[i].fifo);
    free(L->runs);
    free(L->sqps);
    free(L->rqps);
    free(L->chains);
    free(L->table);
    PyTypeObject *tp = Py_TYPE(L);
    tp->tp_free((PyObject *)L);
    Py_DECREF(tp);
}

static run_t *get_run(Loop *L, int r)
{
    if (r < 0 || r >= L->nruns) {
        PyErr_SetString(PyExc_IndexError, "no such run");
        return NULL;
    }
    return &L->runs[r];
}

/* set_run(r, batch, signal_every, sq_depth, static_signal, recv_batch, rq_depth, recv_delay_ns, grh) */
static PyObject *Loop_set_run(Loop *L, PyObject *args)
{
    int ri, batch, every, depth, stat, rb, rqd, grh;
    unsigned long long delay;
    if (!PyArg_ParseTuple(args, "iiiipiiKi", &ri, &batch, &every, &depth, &stat, &rb, &rqd, &delay, &grh))
        return NULL;
    run_t *r = get_run(L, ri);
    if (!r)
        return NULL;
    if (batch < 1 || every < 1 || depth < batch) {
        PyErr_SetString(PyExc_ValueError, "need batch >= 1, signal_every >= 1 and sq_depth >= batch");
        return NULL;
    }
    free(r->pos);
    r->pos = malloc((size_t)(batch + 1) * sizeof(int));
    if (!r->pos)
        return PyErr_NoMemory();
    r->batch = batch;
    r->every = every;
    r->depth = depth;
    r->static_signal = stat;
    r->recv_batch = rb;
    r->rq_depth = rqd;
    r->recv_delay_ns = delay;
    r->grh = grh;
    free(r->lat);
    r->lat = L->max_lat ? malloc(L->max_lat * sizeof(uint64_t)) : NULL;
    if (L->max_lat && !r->lat)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* add_chain(ah, descs) -> chain id. A desc: (wr_id, opcode, send_flags, imm_data, sges, remote_addr, rkey,
 * compare_add, swap, remote_qpn, remote_qkey); sges: ((addr, length, lkey), ...). The WRs are linked in order. */
static PyObject *Loop_add_chain(Loop *L, PyObject *args)
{
    unsigned long long ah;
    PyObject *descs;
    if (!PyArg_ParseTuple(args, "KO", &ah, &descs))
        return NULL;
    Py_ssize_t n = PySequence_Size(descs);
    if (n < 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "an empty chain");
        return NULL;
    }
    Py_ssize_t nsge = count_sges(descs, 4);
    if (nsge < 0)
        return NULL;
    if (grow((void **)&L->chains, &L->capchains, L->nchains + 1, sizeof(chain_t)))
        return PyErr_NoMemory();
    chain_t c;
    c.n = (int)n;
    c.wrs = calloc((size_t)n, sizeof(struct ibv_send_wr));
    c.sges = calloc((size_t)(nsge ? nsge : 1), sizeof(struct ibv_sge));
    if (!c.wrs || !c.sges) {
        free(c.wrs);
        free(c.sges);
        return PyErr_NoMemory();
    }
    Py_ssize_t used = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_GetItem(descs, i), *sg;
        unsigned long long wr_id, raddr, cmp, swap;
        int opcode;
        unsigned int flags, imm, rkey, rqpn, rqkey;
        int ok = d && PyArg_ParseTuple(d, "KiIIOKIKKII", &wr_id, &opcode, &flags, &imm, &sg, &raddr, &rkey, &cmp,
                                       &swap, &rqpn, &rqkey);
        int k = ok ? fill_sges(sg, c.sges + used, (int)(nsge - used)) : -1;
        Py_XDECREF(d);
        if (k < 0) {
            free(c.wrs);
            free(c.sges);
            return NULL;
        }
        struct ibv_send_wr *w = &c.wrs[i];
        w->wr_id = wr_id;
        w->opcode = (enum ibv_wr_opcode)opcode;
        w->send_flags = flags;
        w->imm_data = imm; /* as pyverbs sets it: the host-order value, unconverted */
        w->sg_list = c.sges + used;
        w->num_sge = k;
        used += k;
        if (ah) {
            w->wr.ud.ah = (struct ibv_ah *)(uintptr_t)ah;
            w->wr.ud.remote_qpn = rqpn;
            w->wr.ud.remote_qkey = rqkey;
        } else if (opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
            w->wr.atomic.remote_addr = raddr;
            w->wr.atomic.rkey = rkey;
            w->wr.atomic.compare_add = cmp;
            w->wr.atomic.swap = swap;
        } else {
            w->wr.rdma.remote_addr = raddr;
            w->wr.rdma.rkey = rkey;
        }
        w->next = i + 1 < n ? &c.wrs[i + 1] : NULL;
    }
    L->chains[L->nchains] = c;
    return PyLong_FromLong(L->nchains++);
}

/* add_send_qp(r, qp, qpn, first_chain, nchains) */
static PyObject *Loop_add_send_qp(Loop *L, PyObject *args)
{
    int ri, first, n;
    unsigned long long qp;
    unsigned int qpn;
    if (!PyArg_ParseTuple(args, "iKIii", &ri, &qp, &qpn, &first, &n))
        return NULL;
    run_t *r = get_run(L, ri);
    if (!r)
        return NULL;
    if (first < 0 || n < 1 || first + n > L->nchains) {
        PyErr_SetString(PyExc_ValueError, "no such chains");
        return NULL;
    }
    for (int k = first; k < first + n; k++)
        if (L->chains[k].n != r->batch) {
            PyErr_SetString(PyExc_ValueError, "a chain's length is not the run's batch");
            return NULL;
        }
    if (grow((void **)&L->sqps, &L->capsqp, L->nsqp + 1, sizeof(sqp_t)))
        return PyErr_NoMemory();
    sqp_t *q = &L->sqps[L->nsqp];
    memset(q, 0, sizeof(*q));
    q->qp = (struct ibv_qp *)(uintptr_t)qp;
    q->qpn = qpn;
    q->run = ri;
    q->first_chain = (uint32_t)first;
    q->nchains = (uint32_t)n;
    q->cap = (uint32_t)r->depth + 1;
    q->fifo = calloc(q->cap, sizeof(sig_t_));
    if (!q->fifo)
        return PyErr_NoMemory();
    L->nsqp++;
    Py_RETURN_NONE;
}

static int add_cq(run_t *r, int recv, unsigned long long cq)
{
    struct ibv_cq ***arr = recv ? &r->rcqs : &r->scqs;
    int *n = recv ? &r->nrcq : &r->nscq;
    struct ibv_cq **p = realloc(*arr, (size_t)(*n + 1) * sizeof(struct ibv_cq *));
    if (!p)
        return -1;
    p[(*n)++] = (struct ibv_cq *)(uintptr_t)cq;
    *arr = p;
    return 0;
}

/* add_cq(r, recv, cq) */
static PyObject *Loop_add_cq(Loop *L, PyObject *args)
{
    int ri, recv;
    unsigned long long cq;
    if (!PyArg_ParseTuple(args, "ipK", &ri, &recv, &cq))
        return NULL;
    run_t *r = get_run(L, ri);
    if (!r)
        return NULL;
    if (add_cq(r, recv, cq))
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* set_recv_chain(r, descs): descs ((wr_id, sges), ...) */
static PyObject *Loop_set_recv_chain(Loop *L, PyObject *args)
{
    int ri;
    PyObject *descs;
    if (!PyArg_ParseTuple(args, "iO", &ri, &descs))
        return NULL;
    run_t *r = get_run(L, ri);
    if (!r)
        return NULL;
    Py_ssize_t n = PySequence_Size(descs);
    Py_ssize_t nsge = n > 0 ? count_sges(descs, 1) : 0;
    if (n < 1 || nsge < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "an empty receive chain");
        return NULL;
    }
    struct ibv_recv_wr *wrs = calloc((size_t)n, sizeof(*wrs));
    struct ibv_sge *sges = calloc((size_t)(nsge ? nsge : 1), sizeof(*sges));
    if (!wrs || !sges) {
        free(wrs);
        free(sges);
        return PyErr_NoMemory();
    }
    Py_ssize_t used = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_GetItem(descs, i), *sg;
        unsigned long long wr_id;
        int ok = d && PyArg_ParseTuple(d, "KO", &wr_id, &sg);
        int k = ok ? fill_sges(sg, sges + used, (int)(nsge - used)) : -1;
        Py_XDECREF(d);
        if (k < 0) {
            free(wrs);
            free(sges);
            return NULL;
        }
        wrs[i].wr_id = wr_id;
        wrs[i].sg_list = sges + used;
        wrs[i].num_sge = k;
        wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
        used += k;
    }
    free(r->rwrs);
    free(r->rsges);
    r->rwrs = wrs;
    r->rsges = sges;
    r->nrwr = (int)n;
    Py_RETURN_NONE;
}

/* add_recv_qp(r, qp, qpn) */
static PyObject *Loop_add_recv_qp(Loop *L, PyObject *args)
{
    int ri;
    unsigned long long qp;
    unsigned int qpn;
    if (!PyArg_ParseTuple(args, "iKI", &ri, &qp, &qpn))
        return NULL;
    if (!get_run(L, ri))
        return NULL;
    if (grow((void **)&L->rqps, &L->caprqp, L->nrqp + 1, sizeof(rqp_t)))
        return PyErr_NoMemory();
    rqp_t *q = &L->rqps[L->nrqp++];
    memset(q, 0, sizeof(*q));
    q->qp = (struct ibv_qp *)(uintptr_t)qp;
    q->qpn = qpn;
    q->run = ri;
    Py_RETURN_NONE;
}

/* finish(): build the QP number table; call once after every add_* and before any phase. */
static PyObject *Loop_finish(Loop *L, PyObject *noargs)
{
    if (table_build(L))
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static int ready(Loop *L)
{
    if (!L->table) {
        PyErr_SetString(PyExc_RuntimeError, "Loop.finish() was not called");
        return 0;
    }
    return 1;
}

/* post_initial_recvs(): fill every receive queue with as many post lists as fit (a failure marks it dead). */
static PyObject *Loop_post_initial_recvs(Loop *L, PyObject *noargs)
{
    if (!ready(L))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < L->nrqp; i++) {
        rqp_t *q = &L->rqps[i];
        run_t *r = &L->runs[q->run];
        if (!r->nrwr)
            continue;
        while (!q->dead && q->outstanding + r->recv_batch <= r->rq_depth) {
            struct ibv_recv_wr *bad = NULL;
            int ret = ibv_post_recv(q->qp, r->rwrs, &bad);
            if (ret) {
                q->dead = 1;
                note(r, 1, ret);
            } else {
                q->outstanding += r->recv_batch;
            }
        }
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* traffic(until_ns, measuring) -> True when every send QP is dead */
static PyObject *Loop_traffic(Loop *L, PyObject *args)
{
    unsigned long long until;
    int measuring, all_dead;
    if (!PyArg_ParseTuple(args, "Kp", &until, &measuring) || !ready(L))
        return NULL;
    L->measuring = measuring;
    Py_BEGIN_ALLOW_THREADS
    all_dead = traffic(L, until);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(all_dead);
}

/* set_measuring(flag): whether receive completions count (the phases set it themselves) */
static PyObject *Loop_set_measuring(Loop *L, PyObject *args)
{
    int m;
    if (!PyArg_ParseTuple(args, "p", &m))
        return NULL;
    L->measuring = m;
    Py_RETURN_NONE;
}

static PyObject *Loop_drain(Loop *L, PyObject *args)
{
    unsigned long long deadline;
    if (!PyArg_ParseTuple(args, "K", &deadline) || !ready(L))
        return NULL;
    L->measuring = 0;
    Py_BEGIN_ALLOW_THREADS
    drain(L, deadline);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* serve(until_ns): receives only (a worker with nothing to post, a server end lingering) */
static PyObject *Loop_serve(Loop *L, PyObject *args)
{
    unsigned long long until;
    if (!PyArg_ParseTuple(args, "K", &until) || !ready(L))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    serve(L, until);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* poll_recv_until(until_ns): poll receives without sleeping (receives still arriving after a drain) */
static PyObject *Loop_poll_recv_until(Loop *L, PyObject *args)
{
    unsigned long long until;
    if (!PyArg_ParseTuple(args, "K", &until) || !ready(L))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    while (now_ns() < until)
        poll_recv(L);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* read_back(send_qp_index, desc, wr_id, deadline_ns) -> 0 completed, -1 not within the deadline, -2 post failed
 * (errno in the run's notes), else the error completion's status (counted in the run's errors). One signalled
 * WR posted on send QP i, its completion polled on its run's first send CQ. */
static PyObject *Loop_read_back(Loop *L, PyObject *args)
{
    int i;
    PyObject *desc;
    unsigned long long deadline;
    if (!PyArg_ParseTuple(args, "iOK", &i, &desc, &deadline) || !ready(L))
        return NULL;
    if (i < 0 || i >= L->nsqp) {
        PyErr_SetString(PyExc_IndexError, "no such send QP");
        return NULL;
    }
    PyObject *one = PyTuple_Pack(1, desc);
    if (!one)
        return NULL;
    PyObject *args2 = Py_BuildValue("(KO)", 0ull, one);
    Py_DECREF(one);
    if (!args2)
        return NULL;
    PyObject *cid = Loop_add_chain(L, args2);
    Py_DECREF(args2);
    if (!cid)
        return NULL;
    chain_t *c = &L->chains[PyLong_AsLong(cid)];
    Py_DECREF(cid);
    sqp_t *q = &L->sqps[i];
    run_t *r = &L->runs[q->run];
    uint64_t want = c->wrs[0].wr_id;
    c->wrs[0].send_flags |= IBV_SEND_SIGNALED;
    int result = -1;
    Py_BEGIN_ALLOW_THREADS
    struct ibv_send_wr *bad = NULL;
    int ret = ibv_post_send(q->qp, c->wrs, &bad);
    if (ret) {
        note(r, 0, ret);
        result = -2;
    } else {
        struct ibv_wc wc[POLL_BATCH];
        while (result == -1 && now_ns() < deadline) {
            int n = r->nscq ? ibv_poll_cq(r->scqs[0], POLL_BATCH, wc) : 0;
            for (int k = 0; k < n; k++) {
                if (wc[k].wr_id != want)
                    continue;
                if (wc[k].status != IBV_WC_SUCCESS) {
                    wc_error(r, &wc[k]);
                    result = (int)wc[k].status;
                } else {
                    result = 0;
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(result);
}

/* qps(r) -> ((seq, done, dead), ...) of the run's send QPs, in the order they were added */
static PyObject *Loop_qps(Loop *L, PyObject *args)
{
    int ri;
    if (!PyArg_ParseTuple(args, "i", &ri) || !get_run(L, ri))
        return NULL;
    PyObject *out = PyList_New(0);
    for (int i = 0; out && i < L->nsqp; i++) {
        sqp_t *q = &L->sqps[i];
        if (q->run != ri)
            continue;
        PyObject *t = Py_BuildValue("(KKO)", (unsigned long long)q->seq, (unsigned long long)q->done,
                                    q->dead ? Py_True : Py_False);
        if (!t || PyList_Append(out, t)) {
            Py_XDECREF(t);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(t);
    }
    return out;
}

/* stats(r) -> dict: loops, full, rx_wrs, rx_bytes, rx_total, lat (tuple of ns), errors ((status, vendor_err,
 * n), ...), notes ((kind, err), ...; kind 0 post_send, 1 post_recv, 2 poll_cq), dropped_notes, recv_dead */
static PyObject *Loop_stats(Loop *L, PyObject *args)
{
    int ri;
    if (!PyArg_ParseTuple(args, "i", &ri))
        return NULL;
    run_t *r = get_run(L, ri);
    if (!r)
        return NULL;
    PyObject *lat = PyTuple_New((Py_ssize_t)r->nlat);
    PyObject *errs = PyTuple_New(r->nerrs);
    int nn = r->nnotes < MAX_NOTES ? r->nnotes : MAX_NOTES;
    PyObject *notes = PyTuple_New(nn);
    if (!lat || !errs || !notes)
        goto fail;
    for (size_t k = 0; k < r->nlat; k++) {
        PyObject *v = PyLong_FromUnsignedLongLong(r->lat[k]);
        if (!v)
            goto fail;
        PyTuple_SET_ITEM(lat, (Py_ssize_t)k, v);
    }
    for (int k = 0; k < r->nerrs; k++) {
        PyObject *v = Py_BuildValue("(IIK)", r->errs[k].status, r->errs[k].vendor_err,
                                    (unsigned long long)r->errs[k].n);
        if (!v)
            goto fail;
        PyTuple_SET_ITEM(errs, k, v);
    }
    for (int k = 0; k < nn; k++) {
        PyObject *v = Py_BuildValue("(ii)", r->notes[k].kind, r->notes[k].err);
        if (!v)
            goto fail;
        PyTuple_SET_ITEM(notes, k, v);
    }
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:N,s:N,s:N,s:i}", "loops", (unsigned long long)r->loops, "full",
                         (unsigned long long)r->full, "rx_wrs", (unsigned long long)r->rx_wrs, "rx_bytes",
                         (unsigned long long)r->rx_bytes, "rx_total", (unsigned long long)r->rx_total, "lat", lat,
                         "errors", errs, "notes", notes, "dropped_notes", r->nnotes - nn);
fail:
    Py_XDECREF(lat);
    Py_XDECREF(errs);
    Py_XDECREF(notes);
    return NULL;
}

/* verbs_fraction: of the timed iterations of the measured phases, the share spent inside verbs calls */
static PyObject *Loop_verbs_fraction(Loop *L, void *closure)
{
    return PyFloat_FromDouble(L->timed_total ? (double)L->timed_verbs / (double)L->timed_total : 0.0);
}

static PyMethodDef Loop_methods[] = {
    {"set_run", (PyCFunction)Loop_set_run, METH_VARARGS, "a run's shape (one per share)"},
    {"add_chain", (PyCFunction)Loop_add_chain, METH_VARARGS, "a chain of send WRs from descriptions"},
    {"add_send_qp", (PyCFunction)Loop_add_send_qp, METH_VARARGS, "a client QP posting chains"},
    {"add_cq", (PyCFunction)Loop_add_cq, METH_VARARGS, "a send or receive CQ of a run"},
    {"set_recv_chain", (PyCFunction)Loop_set_recv_chain, METH_VARARGS, "a run's receive post list"},
    {"add_recv_qp", (PyCFunction)Loop_add_recv_qp, METH_VARARGS, "a server QP whose receives are kept posted"},
    {"finish", (PyCFunction)Loop_finish, METH_NOARGS, "done adding; build the lookup"},
    {"post_initial_recvs", (PyCFunction)Loop_post_initial_recvs, METH_NOARGS, "fill every receive queue"},
    {"traffic", (PyCFunction)Loop_traffic, METH_VARARGS, "post and poll until a deadline"},
    {"set_measuring", (PyCFunction)Loop_set_measuring, METH_VARARGS, "count receive completions or not"},
    {"drain", (PyCFunction)Loop_drain, METH_VARARGS, "signal the last WRs and wait for every completion"},
    {"serve", (PyCFunction)Loop_serve, METH_VARARGS, "keep receive queues posted until a deadline"},
    {"poll_recv_until", (PyCFunction)Loop_poll_recv_until, METH_VARARGS, "poll receives until a deadline"},
    {"read_back", (PyCFunction)Loop_read_back, METH_VARARGS, "post one signalled WR and wait for it"},
    {"qps", (PyCFunction)Loop_qps, METH_VARARGS, "a run's send QPs: (seq, done, dead)"},
    {"stats", (PyCFunction)Loop_stats, METH_VARARGS, "a run's counters"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Loop_getset[] = {
    {"verbs_fraction", (getter)Loop_verbs_fraction, NULL, "share of timed loop time inside verbs calls", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot Loop_slots[] = {
    {Py_tp_new, Loop_new},
    {Py_tp_dealloc, Loop_dealloc},
    {Py_tp_methods, Loop_methods},
    {Py_tp_getset, Loop_getset},
    {Py_tp_doc, "Loop(runs, max_latency_samples): the native traffic loop of one worker (see the module)"},
    {0, NULL},
};

static PyType_Spec Loop_spec = {"collie.targets.verbs._native.Loop", sizeof(Loop), 0, Py_TPFLAGS_DEFAULT,
                                Loop_slots};

/* ---- reading raw structs (to validate pointers found by layout, see native.py) ----------------------------- */
static PyObject *struct_fields(PyObject *self, PyObject *args)
{
    const char *what;
    unsigned long long p;
    if (!PyArg_ParseTuple(args, "sK", &what, &p))
        return NULL;
    if (!p) {
        PyErr_SetString(PyExc_ValueError, "NULL");
        return NULL;
    }
    void *v = (void *)(uintptr_t)p;
    if (!strcmp(what, "context")) {
        struct ibv_context *c = v;
        return Py_BuildValue("{s:i,s:i}", "cmd_fd", c->cmd_fd, "num_comp_vectors", c->num_comp_vectors);
    }
    if (!strcmp(what, "cq")) {
        struct ibv_cq *c = v;
        return Py_BuildValue("{s:K,s:i}", "context", (unsigned long long)(uintptr_t)c->context, "cqe", c->cqe);
    }
    if (!strcmp(what, "qp")) {
        struct ibv_qp *q = v;
        return Py_BuildValue("{s:K,s:K,s:K,s:K,s:I,s:i}", "context", (unsigned long long)(uintptr_t)q->context,
                             "pd", (unsigned long long)(uintptr_t)q->pd, "send_cq",
                             (unsigned long long)(uintptr_t)q->send_cq, "recv_cq",
                             (unsigned long long)(uintptr_t)q->recv_cq, "qp_num", q->qp_num, "qp_type",
                             (int)q->qp_type);
    }
    if (!strcmp(what, "ah")) {
        struct ibv_ah *a = v;
        return Py_BuildValue("{s:K,s:K}", "context", (unsigned long long)(uintptr_t)a->context, "pd",
                             (unsigned long long)(uintptr_t)a->pd);
    }
    if (!strcmp(what, "pd")) {
        struct ibv_pd *d = v;
        return Py_BuildValue("{s:K,s:I}", "context", (unsigned long long)(uintptr_t)d->context, "handle",
                             d->handle);
    }
    PyErr_Format(PyExc_ValueError, "unknown struct %s", what);
    return NULL;
}

/* ---- a fake provider -------------------------------------------------------------------------------------- */
typedef struct fake_qp fake_qp;
typedef struct {
    struct ibv_cq cq;
    struct ibv_wc *ring;
    size_t head, count, cap;
} fake_cq;

typedef struct {
    uint64_t wr_id;
    struct ibv_sge *sg;
    int n;
} fake_recv;

struct fake_qp {
    struct ibv_qp qp;
    uint32_t peer;
    fake_recv *recvs;
    size_t rhead, rcount, rcap;
    struct ibv_send_wr *waiting; /* copies held back by an RNR NAK, in order */
    size_t whead, wcount, wcap;
};

static struct ibv_context fake_ctx;
static int fake_move = 1;
static uint64_t fake_rnr_naks;
static fake_qp **fake_qps;
static size_t fake_nqps, fake_capqps;

static fake_qp *fake_find(uint32_t qpn)
{
    for (size_t i = 0; i < fake_nqps; i++)
        if (fake_qps[i] && fake_qps[i]->qp.qp_num == qpn)
            return fake_qps[i];
    return NULL;
}

static void fake_complete(fake_cq *c, uint64_t wr_id, uint32_t qpn, uint32_t byte_len, enum ibv_wc_opcode op)
{
    if (c->count == c->cap) {
        size_t n = c->cap ? c->cap * 2 : 1024;
        struct ibv_wc *p = malloc(n * sizeof(*p));
        if (!p)
            return;
        for (size_t k = 0; k < c->count; k++)
            p[k] = c->ring[(c->head + k) % c->cap];
        free(c->ring);
        c->ring = p;
        c->head = 0;
        c->cap = n;
    }
    struct ibv_wc *w = &c->ring[(c->head + c->count) % c->cap];
    memset(w, 0, sizeof(*w));
    w->wr_id = wr_id;
    w->status = IBV_WC_SUCCESS;
    w->opcode = op;
    w->qp_num = qpn;
    w->byte_len = byte_len;
    c->count++;
}

static size_t gather(const struct ibv_send_wr *w, char *out, size_t max)
{
    size_t pos = 0;
    for (int k = 0; k < w->num_sge; k++) {
        size_t n = w->sg_list[k].length;
        if (pos + n > max)
            n = max - pos;
        memcpy(out + pos, (void *)(uintptr_t)w->sg_list[k].addr, n);
        pos += n;
    }
    return pos;
}

static size_t wr_len(const struct ibv_send_wr *w)
{
    size_t n = 0;
    for (int k = 0; k < w->num_sge; k++)
        n += w->sg_list[k].length;
    return n;
}

/* Runs one WR; 0 when it needs a receive its peer has not posted (an RNR NAK). */
static int fake_execute(fake_qp *q, const struct ibv_send_wr *w)
{
    int op = w->opcode;
    int ud = q->qp.qp_type == IBV_QPT_UD;
    int consumes = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
    fake_qp *peer = consumes ? fake_find(ud ? w->wr.ud.remote_qpn : q->peer) : NULL;
    if (consumes && (!peer || !peer->rcount)) {
        fake_rnr_naks++;
        return 0;
    }
    size_t len = wr_len(w);
    if (fake_move) {
        if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM) {
            char *dst = (char *)(uintptr_t)w->wr.rdma.remote_addr;
            size_t pos = 0;
            for (int k = 0; k < w->num_sge; k++) {
                memmove(dst + pos, (void *)(uintptr_t)w->sg_list[k].addr, w->sg_list[k].length);
                pos += w->sg_list[k].length;
            }
        } else if (op == IBV_WR_RDMA_READ) {
            const char *src = (const char *)(uintptr_t)w->wr.rdma.remote_addr;
            size_t pos = 0;
            for (int k = 0; k < w->num_sge; k++) {
                memmove((void *)(uintptr_t)w->sg_list[k].addr, src + pos, w->sg_list[k].length);
                pos += w->sg_list[k].length;
            }
        } else if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
            uint64_t *target = (uint64_t *)(uintptr_t)w->wr.atomic.remote_addr, old = *target;
            if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
                *target = old + w->wr.atomic.compare_add;
            else if (old == w->wr.atomic.compare_add)
                *target = w->wr.atomic.swap;
            if (w->num_sge)
                memcpy((void *)(uintptr_t)w->sg_list[0].addr, &old, sizeof(old));
        }
    }
    if (consumes) {
        fake_recv *rv = &peer->recvs[peer->rhead];
        peer->rhead = (peer->rhead + 1) % peer->rcap;
        peer->rcount--;
        uint32_t grh = peer->qp.qp_type == IBV_QPT_UD ? 40 : 0;
        if (fake_move && op != IBV_WR_RDMA_WRITE_WITH_IMM) {
            char *data = malloc(len + grh + 1);
            if (data) {
                memset(data, 0, grh);
                gather(w, data + grh, len);
                size_t pos = 0, total = len + grh;
                for (int k = 0; k < rv->n && pos < total; k++) {
                    size_t n = rv->sg[k].length;
                    if (n > total - pos)
                        n = total - pos;
                    memcpy((void *)(uintptr_t)rv->sg[k].addr, data + pos, n);
                    pos += n;
                }
                free(data);
            }
        }
        fake_complete((fake_cq *)peer->qp.recv_cq, rv->wr_id, peer->qp.qp_num, (uint32_t)(len + grh),
                      op == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV);
        free(rv->sg);
    }
    if (w->send_flags & IBV_SEND_SIGNALED)
        fake_complete((fake_cq *)q->qp.send_cq, w->wr_id, q->qp.qp_num, 0, IBV_WC_SEND);
    return 1;
}

static int fake_hold(fake_qp *q, const struct ibv_send_wr *w)
{
    if (q->wcount == q->wcap) {
        size_t n = q->wcap ? q->wcap * 2 : 64;
        struct ibv_send_wr *p = malloc(n * sizeof(*p));
        if (!p)
            return ENOMEM;
        for (size_t k = 0; k < q->wcount; k++)
            p[k] = q->waiting[(q->whead + k) % q->wcap];
        free(q->waiting);
        q->waiting = p;
        q->whead = 0;
        q->wcap = n;
    }
    struct ibv_send_wr *c = &q->waiting[(q->whead + q->wcount) % q->wcap];
    *c = *w;
    c->next = NULL;
    c->sg_list = malloc((size_t)(w->num_sge ? w->num_sge : 1) * sizeof(struct ibv_sge));
    if (!c->sg_list)
        return ENOMEM;
    memcpy(c->sg_list, w->sg_list, (size_t)w->num_sge * sizeof(struct ibv_sge));
    q->wcount++;
    return 0;
}

static void fake_resume(fake_qp *q)
{
    while (q->wcount) {
        struct ibv_send_wr *w = &q->waiting[q->whead];
        if (!fake_execute(q, w))
            return;
        free(w->sg_list);
        q->whead = (q->whead + 1) % q->wcap;
        q->wcount--;
    }
}

static int fake_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *w, struct ibv_send_wr **bad)
{
    fake_qp *q = (fake_qp *)ibqp;
    if (!fake_move) {
        for (; w; w = w->next)
            if (w->send_flags & IBV_SEND_SIGNALED)
                fake_complete((fake_cq *)ibqp->send_cq, w->wr_id, ibqp->qp_num, 0, IBV_WC_RDMA_WRITE);
        return 0;
    }
    for (; w; w = w->next) {
        if (q->wcount || !fake_execute(q, w)) {
            int err = fake_hold(q, w);
            if (err) {
                *bad = w;
                return err;
            }
        }
    }
    return 0;
}

static int fake_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *w, struct ibv_recv_wr **bad)
{
    fake_qp *q = (fake_qp *)ibqp;
    for (; w; w = w->next) {
        if (q->rcount == q->rcap) {
            size_t n = q->rcap ? q->rcap * 2 : 64;
            fake_recv *p = malloc(n * sizeof(*p));
            if (!p) {
                *bad = w;
                return ENOMEM;
            }
            for (size_t k = 0; k < q->rcount; k++)
                p[k] = q->recvs[(q->rhead + k) % q->rcap];
            free(q->recvs);
            q->recvs = p;
            q->rhead = 0;
            q->rcap = n;
        }
        fake_recv *rv = &q->recvs[(q->rhead + q->rcount) % q->rcap];
        rv->wr_id = w->wr_id;
        rv->n = w->num_sge;
        rv->sg = malloc((size_t)(w->num_sge ? w->num_sge : 1) * sizeof(struct ibv_sge));
        if (!rv->sg) {
            *bad = w;
            return ENOMEM;
        }
        memcpy(rv->sg, w->sg_list, (size_t)w->num_sge * sizeof(struct ibv_sge));
        q->rcount++;
    }
    for (size_t i = 0; i < fake_nqps; i++)
        if (fake_qps[i] && fake_qps[i]->wcount)
            fake_resume(fake_qps[i]);
    return 0;
}

static int fake_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
    fake_cq *c = (fake_cq *)ibcq;
    int k = 0;
    while (k < n && c->count) {
        wc[k++] = c->ring[c->head];
        c->head = (c->head + 1) % c->cap;
        c->count--;
    }
    return k;
}

static void fake_init(void)
{
    if (!fake_ctx.ops.post_send) {
        fake_ctx.ops.post_send = fake_post_send;
        fake_ctx.ops.post_recv = fake_post_recv;
        fake_ctx.ops.poll_cq = fake_poll_cq;
    }
}

static PyObject *fake_cq_new(PyObject *self, PyObject *args)
{
    int cqe;
    if (!PyArg_ParseTuple(args, "i", &cqe))
        return NULL;
    fake_init();
    fake_cq *c = calloc(1, sizeof(*c));
    if (!c)
        return PyErr_NoMemory();
    c->cq.context = &fake_ctx;
    c->cq.cqe = cqe;
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)c);
}

static PyObject *fake_qp_new(PyObject *self, PyObject *args)
{
    unsigned long long scq, rcq;
    unsigned int qpn;
    int type;
    if (!PyArg_ParseTuple(args, "KKIi", &scq, &rcq, &qpn, &type))
        return NULL;
    fake_init();
    fake_qp *q = calloc(1, sizeof(*q));
    if (!q)
        return PyErr_NoMemory();
    q->qp.context = &fake_ctx;
    q->qp.send_cq = (struct ibv_cq *)(uintptr_t)scq;
    q->qp.recv_cq = (struct ibv_cq *)(uintptr_t)rcq;
    q->qp.qp_num = qpn;
    q->qp.qp_type = (enum ibv_qp_type)type;
    if (fake_nqps == fake_capqps) {
        size_t n = fake_capqps ? fake_capqps * 2 : 64;
        fake_qp **p = realloc(fake_qps, n * sizeof(*p));
        if (!p) {
            free(q);
            return PyErr_NoMemory();
        }
        fake_qps = p;
        fake_capqps = n;
    }
    fake_qps[fake_nqps++] = q;
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)q);
}

static PyObject *fake_connect(PyObject *self, PyObject *args)
{
    unsigned long long qp;
    unsigned int peer;
    if (!PyArg_ParseTuple(args, "KI", &qp, &peer))
        return NULL;
    ((fake_qp *)(uintptr_t)qp)->peer = peer;
    Py_RETURN_NONE;
}

static PyObject *fake_qp_free(PyObject *self, PyObject *args)
{
    unsigned long long qp;
    if (!PyArg_ParseTuple(args, "K", &qp))
        return NULL;
    fake_qp *q = (fake_qp *)(uintptr_t)qp;
    for (size_t i = 0; i < fake_nqps; i++)
        if (fake_qps[i] == q)
            fake_qps[i] = fake_qps[--fake_nqps];
    for (size_t k = 0; k < q->rcount; k++)
        free(q->recvs[(q->rhead + k) % q->rcap].sg);
    for (size_t k = 0; k < q->wcount; k++)
        free(q->waiting[(q->whead + k) % q->wcap].sg_list);
    free(q->recvs);
    free(q->waiting);
    free(q);
    Py_RETURN_NONE;
}

static PyObject *fake_cq_free(PyObject *self, PyObject *args)
{
    unsigned long long cq;
    if (!PyArg_ParseTuple(args, "K", &cq))
        return NULL;
    fake_cq *c = (fake_cq *)(uintptr_t)cq;
    free(c->ring);
    free(c);
    Py_RETURN_NONE;
}

static PyObject *fake_set_move(PyObject *self, PyObject *args)
{
    int move;
    if (!PyArg_ParseTuple(args, "p", &move))
        return NULL;
    int before = fake_move;
    fake_move = move;
    return PyBool_FromLong(before);
}

static PyObject *fake_rnr(PyObject *self, PyObject *noargs)
{
    return PyLong_FromUnsignedLongLong(fake_rnr_naks);
}

static PyMethodDef methods[] = {
    {"struct_fields", struct_fields, METH_VARARGS, "fields of a raw ibv_context/pd/cq/qp/ah, for validation"},
    {"fake_cq", fake_cq_new, METH_VARARGS, "fake provider: a CQ of cqe entries (its raw pointer)"},
    {"fake_qp", fake_qp_new, METH_VARARGS, "fake provider: a QP (send_cq, recv_cq, qp_num, qp_type)"},
    {"fake_connect", fake_connect, METH_VARARGS, "fake provider: a QP's peer QP number"},
    {"fake_qp_free", fake_qp_free, METH_VARARGS, "fake provider: destroy a QP"},
    {"fake_cq_free", fake_cq_free, METH_VARARGS, "fake provider: destroy a CQ"},
    {"fake_set_move", fake_set_move, METH_VARARGS, "fake provider: move data (True) or complete only; the old value"},
    {"fake_rnr_naks", fake_rnr, METH_NOARGS, "fake provider: WRs that found no receive posted so far"},
    {NULL, NULL, 0, NULL},
};

static int exec_module(PyObject *m)
{
    PyObject *t = PyType_FromSpec(&Loop_spec);
    if (!t)
        return -1;
    if (PyModule_AddObject(m, "Loop", t)) {
        Py_DECREF(t);
        return -1;
    }
    if (PyModule_AddIntConstant(m, "TIMED_EVERY", TIMED_EVERY) || PyModule_AddIntConstant(m, "POLL_BATCH", POLL_BATCH) ||
        PyModule_AddStringConstant(m, "SOURCE", COLLIE_NATIVE_SOURCE))
        return -1;
    return 0;
}

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", "collie's native traffic loop", -1, methods};

PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m && exec_module(m)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
