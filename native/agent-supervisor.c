/*
 * The agent's supervising parent: detached in its own process group by the
 * spawner, it runs the agent as its child and, when the agent ends, writes how (exit code or
 * signal) to a status file beside the log, durably (write, fsync, rename). It outlives the worker,
 * so an exit while no worker runs is still known afterwards, not guessed. It ignores the group's
 * SIGTERM/SIGINT/SIGHUP (the agent, in the same group, gets them) so that it lives to record the
 * outcome.
 *
 * Why C: the node shim it replaces cost about 7 MB of PSS and 50 ms of CPU to start per agent;
 * this costs a few hundred KB and well under a millisecond (bench/supervisor-cost.ts).
 *
 * argv: statusFile logFile maxLogBytes sandboxed command [args...]
 *   sandboxed: 0 (no sandbox), 1 (bubblewrap) or egress:<slirp4netns binary> (bubblewrap in a
 *   network namespace of its own, given user-mode egress by slirp4netns: bubblewrap
 *   names its child on fd 3 and waits on fd 4; slirp4netns is started on that child's namespace
 *   without the host's loopback, says it is ready on its fd 3 and ends when its fd 4 closes, that
 *   is with this supervisor; the agent starts only then. Should it fail, the agent runs with no
 *   network at all, and the log says so).
 * The agent's output goes through it into the log, which it keeps within maxLogBytes on disk: past
 * half of it (at least 4096 bytes) the log becomes `<log>.1` (the one before is dropped) and a new
 * log begins, so the newest output is always kept.
 * Its own environment keeps TWS_EXECUTION_ID (re-identification reads it from /proc/<pid>/environ,
 * executors/host/process-identity.ts); the agent's has it removed.
 * Single-threaded, no stdio, no heap: its cost is a few pages of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h> /* rename() only: no stdio streams are used */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stddef.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

extern char **environ;

#define EXECUTION_MARK "TWS_EXECUTION_ID="
/* The file of the sandbox's own arguments (the agent's environment): opened, unlinked, given to bubblewrap on fd 5. */
#define SANDBOX_ARGS_VARIABLE "TWS_SANDBOX_ARGS="
#define SANDBOX_ARGS_FD 5
/*
 * The control groups of the agent's limits: ':'-separated `cgroup.procs` files the child
 * writes itself into before it runs the agent, so the agent and all it starts are counted from its
 * first instruction. A group it cannot join stops the start (fails closed): `limits_not_applied`.
 */
#define CGROUP_PROCS_VARIABLE "TWS_CGROUP_PROCS="
/*
 * TWS_CGROUP_SHARED=1: the groups are a place's that others share (a task's container, with its own
 * first process): joined only, never removed, and no memory-limit kill is said to be this agent's
 * (their counts are the place's, not its own).
 */
#define CGROUP_SHARED_VARIABLE "TWS_CGROUP_SHARED="
#define LIMITS_NOT_APPLIED (-1)
/*
 * TWS_CONFINE=1: an agent entered into a place from the host (a task's container, by nsenter) gets
 * none of that place's own seccomp profile, which only its first process inherits. So the child
 * confines itself before it runs the entry: no new namespace (unshare, clone with a namespace flag:
 * the way to a user namespace's capabilities, mounts included), no clone3 (whose flags a filter
 * cannot read; libc falls back to clone), no mount or pivot_root, no ptrace nor access to another
 * process's memory. What it runs (nsenter, setpriv, the agent) inherits it and cannot lift it. At
 * least what the host sandbox (bubblewrap: --disable-userns, no capability, its own pid namespace)
 * holds an agent to. A filter that cannot be installed stops the start (fails closed).
 */
#define CONFINE_VARIABLE "TWS_CONFINE="
#define CONFINE_NOT_APPLIED (-2)
/* domain/sandbox.ts SANDBOX_INFO_FD and SANDBOX_BLOCK_FD. */
#define SANDBOX_INFO_FD 3
#define SANDBOX_BLOCK_FD 4
/* Output of the agent's own children may hold the pipes open: the outcome is not held back for long. */
#define DRAIN_AFTER_EXIT_MS 1000
#define LOOPBACK_WAIT_MS 5000
#define LOOPBACK_POLL_MS 5
#define NO_NETWORK_NOTE "the sandbox network could not start: the agent has no network"

static const char *status_file;
/* TWS_CGROUP_PROCS: the agent's groups, left (and their count of memory-limit kills read) when it ended. */
static const char *cgroup_list;
static int cgroup_shared;
static const char *log_file;
static char rotated_file[PATH_MAX];
static int log_fd = -1;
static long long log_size;
static long long half;

static volatile sig_atomic_t child_changed;
static void on_child(int sig) {
  (void)sig;
  child_changed = 1;
}
static void on_group_signal(int sig) { (void)sig; }

static long long now_ms(int clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(const char *what) {
  /* To the supervisor's own stderr: the spawner appends it to the log. */
  const char *prefix = "agent-supervisor: ";
  if (write(2, prefix, strlen(prefix)) < 0 || write(2, what, strlen(what)) < 0 || write(2, "\n", 1) < 0) return;
}

static int write_all(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

static int open_log(void) {
  int fd = open(log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  struct stat st;
  log_size = fstat(fd, &st) == 0 ? st.st_size : 0;
  log_fd = fd;
  return 0;
}

/*
 * Into the log, rotated past half the cap. A chunk longer than half is written in pieces of half,
 * so neither file passes it. A write that fails (a full disk) drops that output, never the agent:
 * the pipe is still drained and the outcome still recorded.
 */
static void log_write(const char *data, size_t len) {
  while (len > 0) {
    size_t piece = len < (size_t)half ? len : (size_t)half;
    if (log_size > 0 && log_size + (long long)piece > half) {
      close(log_fd);
      log_fd = -1;
      rename(log_file, rotated_file);
      if (open_log() < 0) return;
      log_size = 0;
    }
    if (log_fd < 0 && open_log() < 0) return;
    if (write_all(log_fd, data, piece) < 0) return;
    log_size += (long long)piece;
    data += piece;
    len -= piece;
  }
}

static void log_note(const char *note) {
  char line[256];
  size_t n = 0;
  const char *prefix = "task-workspaces: ";
  memcpy(line, prefix, strlen(prefix));
  n = strlen(prefix);
  size_t len = strlen(note);
  if (len > sizeof line - n - 1) len = sizeof line - n - 1;
  memcpy(line + n, note, len);
  n += len;
  line[n++] = '\n';
  log_write(line, n);
}

/* Node's names, as the shim wrote them (and as the SSH runner writes them). */
static const char *const SIGNAL_NAMES[32] = {
    NULL,      "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",    "SIGTRAP", "SIGABRT",  "SIGBUS",
    "SIGFPE",  "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2",   "SIGPIPE", "SIGALRM",  "SIGTERM",
    "SIGSTKFLT", "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP",   "SIGTTIN", "SIGTTOU",  "SIGURG",
    "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO",   "SIGPWR",   "SIGSYS",
};

/* A signal's name into buf: the table's, SIGRTMIN+n for a real-time one, else SIG<n>. */
static const char *signal_name(int sig, char *buf) {
  if (sig > 0 && sig < 32 && SIGNAL_NAMES[sig]) return SIGNAL_NAMES[sig];
  int n = sig >= SIGRTMIN ? sig - SIGRTMIN : sig;
  char *at = buf;
  memcpy(at, sig >= SIGRTMIN ? "SIGRTMIN+" : "SIG", sig >= SIGRTMIN ? 9 : 3);
  at += sig >= SIGRTMIN ? 9 : 3;
  if (n >= 100) *at++ = (char)('0' + n / 100 % 10);
  if (n >= 10) *at++ = (char)('0' + n / 10 % 10);
  *at++ = (char)('0' + n % 10);
  *at = '\0';
  return buf;
}

/* The names node gives spawn errors; others are spawn_failed. */
static const char *errno_code(int err) {
  switch (err) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOEXEC: return "ENOEXEC";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case ELOOP: return "ELOOP";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case E2BIG: return "E2BIG";
    case ENOMEM: return "ENOMEM";
    case ETXTBSY: return "ETXTBSY";
    case EAGAIN: return "EAGAIN";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case LIMITS_NOT_APPLIED: return "limits_not_applied";
    case CONFINE_NOT_APPLIED: return "confinement_not_applied";
    default: return "spawn_failed";
  }
}

static char *put(char *at, const char *s) {
  size_t n = strlen(s);
  memcpy(at, s, n);
  return at + n;
}

static char *put_number(char *at, long long v) {
  char digits[24];
  int n = 0;
  int negative = v < 0;
  unsigned long long u = negative ? (unsigned long long)(-(v + 1)) + 1 : (unsigned long long)v;
  do {
    digits[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u > 0);
  if (negative) *at++ = '-';
  while (n > 0) *at++ = digits[--n];
  return at;
}

static char *put_padded(char *at, long v, int width) {
  for (int i = width - 1; i >= 0; i--) {
    at[i] = (char)('0' + v % 10);
    v /= 10;
  }
  return at + width;
}

/* `new Date().toISOString()`: 2026-12-03T18:34:53.123Z. */
static char *put_now_iso(char *at) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  at = put_padded(at, tm.tm_year + 1900, 4);
  *at++ = '-';
  at = put_padded(at, tm.tm_mon + 1, 2);
  *at++ = '-';
  at = put_padded(at, tm.tm_mday, 2);
  *at++ = 'T';
  at = put_padded(at, tm.tm_hour, 2);
  *at++ = ':';
  at = put_padded(at, tm.tm_min, 2);
  *at++ = ':';
  at = put_padded(at, tm.tm_sec, 2);
  *at++ = '.';
  at = put_padded(at, ts.tv_nsec / 1000000, 3);
  *at++ = 'Z';
  return at;
}

/* The `oom_kill N` count of a memory.oom_control (v1) or memory.events (v2) file; 0 when absent. */
static long long oom_kills_in(const char *file) {
  int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0;
  char text[1024];
  ssize_t got = read(fd, text, sizeof text - 1);
  close(fd);
  if (got <= 0) return 0;
  text[got] = '\0';
  for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
    if (strncmp(line, "oom_kill ", 9) == 0) return strtoll(line + 9, NULL, 10);
  return 0;
}

/*
 * Once the agent ended: whether its memory limit killed one of its processes (the count of its own
 * group), and its groups removed, with its task's when it was the last there (the kernel refuses
 * a group that still holds a process or another agent's group: it stays for the next end).
 */
static int leave_groups(void) {
  if (cgroup_shared) return 0;
  int oom = 0;
  char dir[PATH_MAX], file[PATH_MAX];
  const char *at = cgroup_list;
  while (at && *at) {
    const char *start = at, *end = strchr(at, ':');
    size_t len = end ? (size_t)(end - start) : strlen(start);
    at = end ? end + 1 : start + len;
    if (len == 0 || len + 32 >= sizeof dir) continue;
    memcpy(dir, start, len);
    dir[len] = '\0';
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) continue;
    *slash = '\0'; /* .../exec-<id>/cgroup.procs -> .../exec-<id> */
    size_t dlen = strlen(dir);
    memcpy(file, dir, dlen);
    memcpy(file + dlen, "/memory.oom_control", 20);
    if (oom_kills_in(file) > 0) oom = 1;
    memcpy(file + dlen, "/memory.events", 15);
    if (oom_kills_in(file) > 0) oom = 1;
    /* The sandbox's other processes die with its init, a moment after it: a group they still hold is tried again, for a second at most. */
    for (int tries = 0; rmdir(dir) < 0 && errno == EBUSY && tries < 100; tries++) {
      struct timespec pause = {.tv_sec = 0, .tv_nsec = 10 * 1000000};
      nanosleep(&pause, NULL);
    }
    slash = strrchr(dir, '/');
    if (slash && slash != dir) {
      *slash = '\0';
      rmdir(dir);
    }
  }
  return oom;
}

/*
 * {"exitCode":N|null,"signal":null|"SIG…"[,"error":"ENOENT"][,"limit":"memory"],"endedAt":"…"} to <status>.tmp (0600),
 * fsynced, renamed into place (and the folder synced, so the rename itself survives a crash).
 * Then this process ends.
 */
static void record(int has_code, long long exit_code, const char *signal, const char *error) {
  char json[256];
  char *at = json;
  at = put(at, "{\"exitCode\":");
  at = has_code ? put_number(at, exit_code) : put(at, "null");
  at = put(at, ",\"signal\":");
  if (signal) {
    at = put(at, "\"");
    at = put(at, signal);
    at = put(at, "\"");
  } else
    at = put(at, "null");
  if (error) {
    at = put(at, ",\"error\":\"");
    at = put(at, error);
    at = put(at, "\"");
  }
  if (leave_groups()) {
    at = put(at, ",\"limit\":\"memory\"");
    log_note("the agent reached its memory limit: the kernel killed it (oom_killed)");
  }
  at = put(at, ",\"endedAt\":\"");
  at = put_now_iso(at);
  at = put(at, "\"}");

  char tmp[PATH_MAX];
  size_t len = strlen(status_file);
  if (len + 5 > sizeof tmp) {
    say("the status file's name is too long");
    _exit(1);
  }
  memcpy(tmp, status_file, len);
  memcpy(tmp + len, ".tmp", 5);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || write_all(fd, json, (size_t)(at - json)) < 0 || fsync(fd) < 0 || close(fd) < 0 ||
      rename(tmp, status_file) < 0) {
    say("the exit status could not be written");
    _exit(1);
  }
  char dir[PATH_MAX];
  memcpy(dir, status_file, len + 1);
  char *slash = strrchr(dir, '/');
  if (slash == dir) dir[1] = '\0';
  else if (slash) *slash = '\0';
  else memcpy(dir, ".", 2);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  _exit(0);
}

/* A descriptor moved to 10 or above, close-on-exec: none of the child's own numbers (0-4) is taken by it. */
static int high(int fd) {
  if (fd < 0) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return moved;
}

static int pipe_high(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) < 0) return -1;
  fds[0] = high(fds[0]);
  fds[1] = high(fds[1]);
  return fds[0] < 0 || fds[1] < 0 ? -1 : 0;
}

/* In a forked child: default signal handling, nothing blocked, as a freshly spawned process has. */
static void child_signals(void) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &dfl, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

/* fd `from` becomes `to` in the child (inherited across exec). */
static int place(int from, int to) { return dup2(from, to) < 0 ? -1 : 0; }

static size_t env_count(void) {
  size_t n = 0;
  while (environ[n]) n++;
  return n;
}

/*
 * The pid bubblewrap names on its info fd (`"child-pid"\s*:\s*(\d+)`), into out. Digits at the end
 * of what came so far may be only the first of them: taken only once more has come, or at its end.
 */
static int child_pid_of(const char *info, int complete, char *out, size_t size) {
  const char *key = strstr(info, "\"child-pid\"");
  if (!key) return 0;
  const char *p = key + strlen("\"child-pid\"");
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v') p++;
  if (*p++ != ':') return 0;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v') p++;
  size_t digits = 0;
  while (p[digits] >= '0' && p[digits] <= '9') digits++;
  if (digits == 0 || digits >= size || (p[digits] == '\0' && !complete)) return 0;
  memcpy(out, p, digits);
  out[digits] = '\0';
  return 1;
}

/* Writes this process into each group of the ':'-separated list; -1 at the first that fails. */
static int join_groups(const char *list) {
  char file[PATH_MAX];
  const char *at = list;
  while (*at) {
    const char *end = strchr(at, ':');
    size_t len = end ? (size_t)(end - at) : strlen(at);
    if (len == 0 || len >= sizeof file) return -1;
    memcpy(file, at, len);
    file[len] = '\0';
    int fd = open(file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return -1;
    /* 0: the writing process itself. */
    int joined = write(fd, "0\n", 2) == 2;
    close(fd);
    if (!joined) return -1;
    at = end ? end + 1 : at + len;
  }
  return 0;
}

#if defined(__x86_64__)
#define CONFINE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CONFINE_ARCH AUDIT_ARCH_AARCH64
#endif

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#define NAMESPACE_FLAGS                                                                                   \
  (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | \
   CLONE_NEWTIME)
#define REFUSE(nr, err)                                  \
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),      \
  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err))

static int confine(void) {
#ifdef CONFINE_ARCH
  struct sock_filter filter[] = {
    /* Another architecture's calls (a 32-bit entry) would bypass the numbers below: refused whole. */
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CONFINE_ARCH, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef __x86_64__
    /* x32 calls (bit 30 set) name the same calls by other numbers. */
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#endif
    REFUSE(__NR_ptrace, EPERM),
    REFUSE(__NR_process_vm_readv, EPERM),
    REFUSE(__NR_process_vm_writev, EPERM),
    REFUSE(__NR_mount, EPERM),
    REFUSE(__NR_umount2, EPERM),
    REFUSE(__NR_pivot_root, EPERM),
#ifdef __NR_clone3
    REFUSE(__NR_clone3, ENOSYS),
#endif
#ifdef __NR_open_tree
    REFUSE(__NR_open_tree, EPERM),
    REFUSE(__NR_move_mount, EPERM),
    REFUSE(__NR_fsopen, EPERM),
    REFUSE(__NR_fsmount, EPERM),
    REFUSE(__NR_fspick, EPERM),
#endif
    /* unshare and clone: refused with any namespace flag (their first argument, low word). */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 1, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NAMESPACE_FLAGS, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {.len = (unsigned short)(sizeof filter / sizeof filter[0]), .filter = filter};
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0);
#else
  errno = ENOSYS;
  return -1;
#endif
}

int main(int argc, char **argv) {
  if (argc < 6) {
    say("usage: agent-supervisor statusFile logFile maxLogBytes sandboxed command [args...]");
    return 2;
  }
  status_file = argv[1];
  log_file = argv[2];
  const char *sandboxed = argv[4];
  char **command = argv + 5;
  const char *egress = strncmp(sandboxed, "egress:", 7) == 0 ? sandboxed + 7 : NULL;
  int sandbox = strcmp(sandboxed, "0") != 0;

  /* Number(maxLogBytes) / 2, at least 4096; a value that is no number keeps the least. */
  char *end = NULL;
  errno = 0;
  long long max = strtoll(argv[3], &end, 10);
  half = (errno == 0 && end != argv[3] && *end == '\0' && max / 2 > 4096) ? max / 2 : 4096;
  size_t log_len = strlen(log_file);
  if (log_len + 3 > sizeof rotated_file) {
    say("the log file's name is too long");
    return 1;
  }
  memcpy(rotated_file, log_file, log_len);
  memcpy(rotated_file + log_len, ".1", 3);

  /* Handlers, not SIG_IGN: an exec resets handlers to default, so the agent is not born ignoring them. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_group_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, NULL);
  sa.sa_handler = on_child;
  sa.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  /* SIGCHLD is let in only while waiting in ppoll: no exit is missed between a check and the wait. */
  sigset_t chld, waiting;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &waiting);
  sigdelset(&waiting, SIGCHLD);

  if (open_log() < 0) {
    say("the log cannot be opened");
    return 1;
  }

  /*
   * The environment of what it starts (setpriv and bubblewrap, or env(1), and slirp4netns): its own
   * fixed one (the service gives it no variable of the request) without the execution's mark and
   * the arguments file's name. The agent's own variables are set by bubblewrap inside the sandbox.
   */
  size_t envs = env_count();
  char *child_env_storage[envs + 1];
  size_t kept = 0;
  const char *args_path = NULL;
  const char *cgroup_procs = NULL;
  int confined = 0;
  for (size_t i = 0; i < envs; i++) {
    if (strncmp(environ[i], SANDBOX_ARGS_VARIABLE, strlen(SANDBOX_ARGS_VARIABLE)) == 0)
      args_path = environ[i] + strlen(SANDBOX_ARGS_VARIABLE);
    else if (strncmp(environ[i], CGROUP_PROCS_VARIABLE, strlen(CGROUP_PROCS_VARIABLE)) == 0)
      cgroup_list = cgroup_procs = environ[i] + strlen(CGROUP_PROCS_VARIABLE);
    else if (strncmp(environ[i], CGROUP_SHARED_VARIABLE, strlen(CGROUP_SHARED_VARIABLE)) == 0)
      cgroup_shared = strcmp(environ[i] + strlen(CGROUP_SHARED_VARIABLE), "1") == 0;
    else if (strncmp(environ[i], CONFINE_VARIABLE, strlen(CONFINE_VARIABLE)) == 0)
      confined = strcmp(environ[i] + strlen(CONFINE_VARIABLE), "1") == 0;
    else if (strncmp(environ[i], EXECUTION_MARK, strlen(EXECUTION_MARK)) != 0)
      child_env_storage[kept++] = environ[i];
  }
  child_env_storage[kept] = NULL;
  int args_fd = -1;
  if (args_path) {
    args_fd = high(open(args_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (args_fd < 0) record(1, 127, NULL, errno_code(errno));
    /* Read from the descriptor only: the file holds the agent's variables, gone from disk at once. */
    unlink(args_path);
  }

  int out[2], err[2], info[2] = {-1, -1}, block[2] = {-1, -1}, failed[2];
  if (pipe_high(out) < 0 || pipe_high(err) < 0 || pipe_high(failed) < 0 ||
      (egress && (pipe_high(info) < 0 || pipe_high(block) < 0))) {
    record(1, 127, NULL, errno_code(errno));
  }
  int devnull = high(open("/dev/null", O_RDONLY | O_CLOEXEC));

  pid_t child = fork();
  if (child < 0) record(1, 127, NULL, errno_code(errno));
  if (child == 0) {
    child_signals();
    if (devnull < 0 || place(devnull, 0) < 0 || place(out[1], 1) < 0 || place(err[1], 2) < 0 ||
        (egress && (place(info[1], SANDBOX_INFO_FD) < 0 || place(block[0], SANDBOX_BLOCK_FD) < 0)) ||
        (args_fd >= 0 && place(args_fd, SANDBOX_ARGS_FD) < 0)) {
      int e = errno;
      if (write(failed[1], &e, sizeof e) < 0) _exit(127);
      _exit(127);
    }
    if (cgroup_procs && join_groups(cgroup_procs) < 0) {
      int e = LIMITS_NOT_APPLIED;
      if (write(failed[1], &e, sizeof e) < 0) _exit(127);
      _exit(127);
    }
    if (confined && confine() < 0) {
      int e = CONFINE_NOT_APPLIED;
      if (write(failed[1], &e, sizeof e) < 0) _exit(127);
      _exit(127);
    }
    execvpe(command[0], command, child_env_storage);
    int e = errno;
    if (write(failed[1], &e, sizeof e) < 0) _exit(127);
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  close(failed[1]);
  if (devnull >= 0) close(devnull);
  if (args_fd >= 0) close(args_fd);
  if (egress) {
    close(info[1]);
    close(block[0]);
  }
  /* The exec's outcome: end of file when it ran (close-on-exec), its errno when it could not. */
  int exec_errno = 0;
  ssize_t got;
  do got = read(failed[0], &exec_errno, sizeof exec_errno);
  while (got < 0 && errno == EINTR);
  close(failed[0]);
  if (got == (ssize_t)sizeof exec_errno) {
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
    }
    record(1, 127, NULL, errno_code(exec_errno));
  }

  /* The agent's outcome once known, and when it came. */
  int exited = 0, has_code = 0;
  long long exit_code = 0;
  const char *signal = NULL;
  char signal_buf[16];
  long long exited_at = 0;

  /* The egress dance (sandboxed = egress:<binary>). */
  char info_text[1024];
  size_t info_len = 0;
  enum { NET_NONE, NET_WAITING, NET_STARTED, NET_READY } network = NET_NONE;
  char net_pid[16] = "";
  long long loopback_until = 0;
  int ready_fd = -1, exit_fd = -1;
  pid_t slirp = -1;

  char buf[16384];
  for (;;) {
    if (network == NET_WAITING) {
      /*
       * bubblewrap names its child before the child sets up its loopback, and slirp4netns brings
       * the loopback up too: started at once, the two race and bubblewrap fails. So it starts once
       * the loopback is up (its broadcast route is in the namespace's table), or after 5 s in any case.
       */
      char path[64] = "/proc/";
      strcat(path, net_pid);
      strcat(path, "/net/fib_trie");
      int up = 0;
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        /* Searched with the tail of the previous read kept in front: a match across two reads is found. */
        static const char route[] = "127.255.255.255";
        char scan[4096 + sizeof route];
        size_t carry = 0;
        ssize_t n;
        while (!up && (n = read(fd, scan + carry, 4096)) > 0) {
          size_t have = carry + (size_t)n;
          if (memmem(scan, have, route, sizeof route - 1)) up = 1;
          carry = have < sizeof route - 2 ? have : sizeof route - 2;
          memmove(scan, scan + have - carry, carry);
        }
        close(fd);
      }
      if (up || now_ms(CLOCK_MONOTONIC) > loopback_until) {
        int ready[2], ends[2];
        network = NET_STARTED;
        if (pipe_high(ready) == 0 && pipe_high(ends) == 0) {
          /*
           * The namespace by its path: slirp4netns then enters the network namespace only, not the
           * agent's user namespace (whose uid it is not).
           */
          char netns_path[64] = "/proc/";
          strcat(netns_path, net_pid);
          strcat(netns_path, "/ns/net");
          char *slirp_argv[] = {(char *)egress,  "--configure", "--mtu=65520", "--disable-host-loopback",
                                "--ready-fd=3",  "--exit-fd=4", "--netns-type=path", netns_path,
                                "tap0",          NULL};
          int null_fd = high(open("/dev/null", O_RDWR | O_CLOEXEC));
          slirp = fork();
          if (slirp == 0) {
            child_signals();
            if (null_fd >= 0 && place(null_fd, 0) == 0 && place(null_fd, 1) == 0 && place(null_fd, 2) == 0 &&
                place(ready[1], 3) == 0 && place(ends[0], 4) == 0)
              execvpe(egress, slirp_argv, child_env_storage);
            _exit(127);
          }
          if (null_fd >= 0) close(null_fd);
          close(ready[1]);
          close(ends[0]);
          /* Its fd 4's other end stays open here until this process ends: then slirp4netns ends too. */
          exit_fd = ends[1];
          ready_fd = ready[0];
          if (slirp < 0) {
            close(ready_fd);
            ready_fd = -1;
          }
        }
        if (ready_fd < 0) {
          /* Not started at all: the agent goes on without a network. */
          network = NET_READY;
          log_note(NO_NETWORK_NOTE);
          if (write(block[1], "1", 1) < 0) {
          }
          close(block[1]);
          block[1] = -1;
        }
      }
    }
    (void)exit_fd;

    struct pollfd fds[4];
    int n = 0, at_out = -1, at_err = -1, at_info = -1, at_ready = -1;
    if (out[0] >= 0) fds[at_out = n++] = (struct pollfd){.fd = out[0], .events = POLLIN};
    if (err[0] >= 0) fds[at_err = n++] = (struct pollfd){.fd = err[0], .events = POLLIN};
    if (info[0] >= 0) fds[at_info = n++] = (struct pollfd){.fd = info[0], .events = POLLIN};
    if (ready_fd >= 0) fds[at_ready = n++] = (struct pollfd){.fd = ready_fd, .events = POLLIN};

    long long timeout = -1;
    if (network == NET_WAITING) timeout = LOOPBACK_POLL_MS;
    if (exited) {
      long long left = exited_at + DRAIN_AFTER_EXIT_MS - now_ms(CLOCK_MONOTONIC);
      if (out[0] < 0 && err[0] < 0) left = 0;
      if (left <= 0) record(has_code, exit_code, signal, NULL);
      if (timeout < 0 || left < timeout) timeout = left;
    }
    struct timespec ts = {.tv_sec = timeout / 1000, .tv_nsec = (timeout % 1000) * 1000000};
    int ready_count = ppoll(fds, (nfds_t)n, timeout < 0 ? NULL : &ts, &waiting);

    if (child_changed || ready_count < 0) {
      child_changed = 0;
      int status;
      pid_t pid;
      while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid == slirp) {
          slirp = -1;
          if (network == NET_STARTED) {
            network = NET_READY;
            log_note(NO_NETWORK_NOTE);
            if (write(block[1], "1", 1) < 0) {
            }
            close(block[1]);
            block[1] = -1;
          }
          continue;
        }
        if (pid != child || exited) continue;
        exited = 1;
        exited_at = now_ms(CLOCK_MONOTONIC);
        if (WIFSIGNALED(status)) {
          signal = signal_name(WTERMSIG(status), signal_buf);
          has_code = 0;
        } else {
          has_code = 1;
          exit_code = WEXITSTATUS(status);
          /* Bubblewrap ends with 128 + N for a child ended by signal N: read back as that signal. */
          if (sandbox && exit_code > 128 && exit_code - 128 < 32 && SIGNAL_NAMES[exit_code - 128]) {
            signal = SIGNAL_NAMES[exit_code - 128];
            has_code = 0;
          }
        }
      }
    }
    if (ready_count <= 0) continue;

    for (int i = 0; i < n; i++) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got_now = read(fds[i].fd, buf, sizeof buf);
      if (got_now < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (i == at_out || i == at_err) {
        if (got_now > 0) log_write(buf, (size_t)got_now);
        else {
          close(fds[i].fd);
          if (i == at_out) out[0] = -1;
          else err[0] = -1;
        }
      } else if (i == at_info) {
        if (got_now > 0) {
          size_t room = sizeof info_text - 1 - info_len;
          size_t take = (size_t)got_now < room ? (size_t)got_now : room;
          memcpy(info_text + info_len, buf, take);
          info_len += take;
          info_text[info_len] = '\0';
        } else {
          close(info[0]);
          info[0] = -1;
        }
        if (network == NET_NONE && child_pid_of(info_text, got_now <= 0, net_pid, sizeof net_pid)) {
          network = NET_WAITING;
          loopback_until = now_ms(CLOCK_MONOTONIC) + LOOPBACK_WAIT_MS;
        }
      } else if (i == at_ready) {
        close(ready_fd);
        ready_fd = -1;
        if (network != NET_STARTED) continue;
        network = NET_READY;
        if (got_now <= 0) log_note(NO_NETWORK_NOTE);
        if (write(block[1], "1", 1) < 0) {
        }
        close(block[1]);
        block[1] = -1;
      }
    }
  }
}
