#!/usr/bin/env python3
"""exec_sched: a small batch scheduler written as one script, for hyperfed's
`exec` adapter contract tests and as a worked example of the exec contract
(docs/adapters.md, "exec").

Usage: sched.py --state DIR [--slots N] [--no-estimates] OP [ARGS...]

The queue lives in DIR/queue.json; every call takes an exclusive lock on
DIR/lock, so concurrent calls are safe. Jobs really run: a started job's
script runs under /bin/sh in a session of its own (its process group id is
recorded), writing DIR/jobs/ID/out, and DIR/jobs/ID/exit when it ends.

There is no daemon: each call first brings the queue up to date (finished
jobs become done; free slots go to the oldest pending jobs, strictly in
queue order) and only then does its operation. So a job starts at the first
call after a slot frees, which is all the contract asks ("a moment after").

A job uses min(cores, slots) of the N slots (default 2).

Operations (the exec contract):
  list                    {"jobs": [...]}, pending, held and running jobs, oldest first
  capacity                {"units": N, "speed": 1.0}
  hold ID | release ID | cancel ID
  export ID               the job's spec
  submit TAG HELD         spec JSON on stdin; HELD is true or false; {"id": "..."}
  find_by_tag TAG         {"jobs": [...]}, in any state
  pin ID true|false
Optional operations (the adapter runs them when configured; see
extra_operations in docs/adapters.md):
  widest                  {"cores": N}: the widest job, the N slots
  arrival W...            {"starts_ms": [...]}: when a job of W cores submitted
                          now would start, one per width
`list` gives each pending job its expected start_ms: the queue played
forward in order, each job running for its spec's duration_ms (the only
run time this scheduler knows). --no-estimates leaves start_ms out and has
no optional operations: a scheduler that says nothing of start times.
Exit 10: no such job; exit 11: the job is in the wrong state; 2: bad usage.

Test-only operation, not part of the contract:
  shutdown                kill every running job's process group (SIGKILL)
"""

import fcntl
import json
import os
import sys
import time

# subprocess and signal are imported where they are used: most calls need
# neither, and every call pays for its imports.

EXIT_NOT_FOUND = 10
EXIT_WRONG_STATE = 11
EXIT_USAGE = 2

# How a job runs: its script under /bin/sh, then its exit status is written
# to a temporary file and renamed into place, so `exit` is never seen half
# written. $1: the job folder, $2: the script.
WRAPPER = '/bin/sh "$2" >"$1/out" 2>&1; echo $? >"$1/exit.tmp"; mv "$1/exit.tmp" "$1/exit"'


class Fail(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def now_ms():
    return int(time.time() * 1000)


def load(state_dir):
    try:
        with open(os.path.join(state_dir, "queue.json"), encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return {"next_id": 1, "jobs": {}}


def save(state_dir, q):
    path = os.path.join(state_dir, "queue.json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(q, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def ordered(q):
    return [q["jobs"][k] for k in sorted(q["jobs"], key=int)]


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def read_exit(job_dir):
    try:
        with open(os.path.join(job_dir, "exit"), encoding="utf-8") as f:
            return int(f.read().strip() or "-1")
    except FileNotFoundError:
        return None


def start(state_dir, job):
    import subprocess
    job_dir = os.path.join(state_dir, "jobs", job["id"])
    os.makedirs(job_dir, exist_ok=True)
    script = os.path.join(job_dir, "script")
    with open(script, "w", encoding="utf-8") as f:
        f.write(job["spec"].get("script", ""))
    workdir = job["spec"].get("workdir") or job_dir
    job["started_at_ms"] = now_ms()
    if not os.path.isdir(workdir):
        # As a real scheduler would: the job starts and fails at once.
        job["state"] = "done"
        job["exit_code"] = 1
        return
    env = dict(os.environ)
    env.update(job["spec"].get("env", {}))
    env["EXEC_SCHED_JOB_ID"] = job["id"]
    p = subprocess.Popen(["/bin/sh", "-c", WRAPPER, "exec-sched-job", job_dir, script],
                         cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    job["state"] = "running"
    job["pgid"] = p.pid  # a new session: its process group id is its pid


def tick(state_dir, q, slots):
    """Brings the queue up to date: ends finished jobs, starts pending ones."""
    used = 0
    for job in ordered(q):
        if job["state"] != "running":
            continue
        job_dir = os.path.join(state_dir, "jobs", job["id"])
        code = read_exit(job_dir)
        if code is None and not group_alive(job["pgid"]):
            code = read_exit(job_dir)  # it may have ended between the two looks
            if code is None:
                code = -1  # killed before it could say
        if code is not None:
            job["state"] = "done"
            job["exit_code"] = code
        else:
            used += min(max(job["spec"].get("cores", 1), 1), slots)
    for job in ordered(q):
        if job["state"] != "pending":
            continue
        need = min(max(job["spec"].get("cores", 1), 1), slots)
        if used + need > slots:
            break  # strict queue order: nobody overtakes the oldest
        start(state_dir, job)
        if job["state"] == "running":
            used += need


def forecast(q, slots, extra_widths=()):
    """Plays the queue forward, strictly in order, each job running for its
    spec's duration_ms: each pending job's expected start, then for each of
    extra_widths when a job of that width queued last would start."""
    now = now_ms()
    ends = []  # (end_ms, slots) of running and planned jobs
    for job in ordered(q):
        if job["state"] == "running":
            need = min(max(job["spec"].get("cores", 1), 1), slots)
            ends.append((max(job["started_at_ms"] + job["spec"].get("duration_ms", 0), now + 1), need))

    def earliest(need, not_before):
        # The first time from not_before on with `need` slots free for good.
        t = not_before
        for end, _ in sorted(ends):
            if slots - sum(n for e, n in ends if e > t) >= need:
                break
            t = max(t, end)
        return t

    starts, last = {}, now
    for job in ordered(q):
        if job["state"] != "pending":
            continue
        need = min(max(job["spec"].get("cores", 1), 1), slots)
        last = earliest(need, last)
        starts[job["id"]] = last
        ends.append((last + max(job["spec"].get("duration_ms", 0), 1), need))
    return starts, [earliest(min(w, slots), last) for w in extra_widths]


def view(job, starts=None):
    v = {k: job[k] for k in ("id", "state", "pinned", "tag", "queued_at_ms", "spec")}
    if starts and job["id"] in starts:
        v["start_ms"] = starts[job["id"]]
    return v


def find(q, job_id):
    job = q["jobs"].get(job_id)
    if job is None:
        raise Fail(EXIT_NOT_FOUND, f"no job {job_id!r}")
    return job


def wrong_state(job, op):
    return Fail(EXIT_WRONG_STATE, f"cannot {op} job {job['id']}: it is {job['state']}")


def op_hold(q, job_id):
    job = find(q, job_id)
    if job["state"] == "pending":
        job["state"] = "held"
    elif job["state"] != "held":
        raise wrong_state(job, "hold")


def op_release(q, job_id):
    job = find(q, job_id)
    if job["state"] == "held":
        job["state"] = "pending"
    elif job["state"] != "pending":
        raise wrong_state(job, "release")


def op_cancel(q, job_id):
    job = find(q, job_id)
    if job["state"] in ("pending", "held"):
        job["state"] = "cancelled"
    elif job["state"] != "cancelled":
        raise wrong_state(job, "cancel")


def op_pin(q, job_id, value):
    if value not in ("true", "false"):
        raise Fail(EXIT_USAGE, f"pin: want true or false, got {value!r}")
    find(q, job_id)["pinned"] = value == "true"


def op_submit(q, tag, held):
    if held not in ("true", "false"):
        raise Fail(EXIT_USAGE, f"submit: HELD must be true or false, got {held!r}")
    spec = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    if not isinstance(spec, dict):
        raise Fail(EXIT_USAGE, "submit: the spec on stdin is not a JSON object")
    # Idempotent by tag, in any state; hyperfed also looks first, this is for
    # everyone else.
    if tag:
        for job in ordered(q):
            if job["tag"] == tag:
                return job["id"]
    job_id = str(q["next_id"])
    q["next_id"] += 1
    q["jobs"][job_id] = {"id": job_id, "state": "held" if held == "true" else "pending", "pinned": False,
                         "tag": tag, "queued_at_ms": now_ms(), "spec": spec}
    return job_id


def op_shutdown(state_dir, q):
    import signal
    for job in ordered(q):
        if job["state"] == "running" and read_exit(os.path.join(state_dir, "jobs", job["id"])) is None:
            try:
                os.killpg(job["pgid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
            job["state"] = "done"
            job["exit_code"] = -signal.SIGKILL


def out(obj):
    sys.stdout.buffer.write(json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n")


def main(argv):
    state_dir, slots, rest, estimates = None, 2, [], True
    i = 0
    while i < len(argv):
        if argv[i] == "--no-estimates":
            estimates = False
            i += 1
            continue
        if argv[i] == "--state" and i + 1 < len(argv):
            state_dir = argv[i + 1]
            i += 2
        elif argv[i] == "--slots" and i + 1 < len(argv):
            slots = int(argv[i + 1])
            i += 2
        else:
            rest = argv[i:]
            break
    if not state_dir or not rest or slots < 1:
        raise Fail(EXIT_USAGE, "usage: sched.py --state DIR [--slots N] OP [ARGS...]")
    op, args = rest[0], rest[1:]
    arity = {"list": 0, "capacity": 0, "hold": 1, "release": 1, "cancel": 1, "export": 1, "submit": 2,
             "find_by_tag": 1, "pin": 2, "shutdown": 0, "widest": 0}
    if not estimates and op in ("widest", "arrival"):
        raise Fail(EXIT_USAGE, f"unknown operation: {op}")
    if op == "arrival":
        if not args or not all(a.isdigit() and 1 <= int(a) <= slots for a in args):
            raise Fail(EXIT_USAGE, f"arrival wants widths in [1, {slots}]: {args}")
    elif arity.get(op) != len(args):
        raise Fail(EXIT_USAGE, f"unknown operation or wrong arguments: {op} {args}")

    os.makedirs(state_dir, exist_ok=True)
    with open(os.path.join(state_dir, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        q = load(state_dir)
        if op == "shutdown":
            op_shutdown(state_dir, q)
            save(state_dir, q)
            return
        tick(state_dir, q, slots)
        result = None
        try:
            if op == "list":
                starts, _ = forecast(q, slots) if estimates else ({}, [])
                result = {"jobs": [view(j, starts) for j in ordered(q)
                                   if j["state"] in ("pending", "held", "running")]}
            elif op == "widest":
                result = {"cores": slots}
            elif op == "arrival":
                _, tails = forecast(q, slots, [int(a) for a in args])
                result = {"starts_ms": tails}
            elif op == "capacity":
                result = {"units": slots, "speed": 1.0}
            elif op == "hold":
                op_hold(q, args[0])
            elif op == "release":
                op_release(q, args[0])
            elif op == "cancel":
                op_cancel(q, args[0])
            elif op == "export":
                result = find(q, args[0])["spec"]
            elif op == "find_by_tag":
                result = {"jobs": [view(j) for j in ordered(q) if j["tag"] == args[0]]}
            elif op == "pin":
                op_pin(q, args[0], args[1])
            elif op == "submit":
                result = {"id": op_submit(q, args[0], args[1])}
                tick(state_dir, q, slots)  # a free slot takes it now
        finally:
            # The tick's progress is kept even when the operation failed.
            save(state_dir, q)
        # Only what is saved is acknowledged.
        if result is not None:
            out(result)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Fail as e:
        print(f"exec_sched: {e}", file=sys.stderr)
        sys.exit(e.code)
