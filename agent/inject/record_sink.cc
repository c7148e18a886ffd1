#include "agent/inject/record_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "core/control_page.h"
#include "core/wire.h"

namespace rankscope::inject {
namespace {

// A batch waits at most this long (measured at the next record) before it is sent.
constexpr DurationNs kFlushInterval = 100 * kNsPerMs;
// How long anyone waits for a busy buffer before giving up (FlushAll skips it, a record is
// dropped). FlushAll holds a buffer for one non-blocking send; the bound only matters when an
// NVTX call in a signal handler interrupts the same thread's Emit, which must not hang.
constexpr int kBusySpins = 100000;

std::atomic<bool> g_active{false};
std::atomic<bool> g_said_disabled{false};
std::atomic<uint32_t> g_pid{0};
std::atomic<uint32_t> g_dropped{0};

// Why records were dropped, each said once per process in a notice (the report's only way to
// tell a user which bound to raise): a bit set where a record is lost, the notice carried by the
// next batch that goes out, with the count.
enum DropCause : uint32_t {
  kDropNoBuffer = 1,    // a thread's buffer could not be made
  kDropBusy = 2,        // the thread's buffer stayed busy (an NVTX call in a signal handler)
  kDropTooLarge = 4,    // one record larger than an empty batch
  kDropSocketFull = 8,  // the agent's socket buffer was full: the agent reads too slowly
  kDropNotSent = 16,    // no connection to the agent (yet), or the program closed ours
};
constexpr int kDropCauses = 5;
constexpr const char* kDropWhy[kDropCauses] = {
    "records were dropped: a thread's record buffer could not be allocated",
    "records were dropped: a thread's record buffer stayed busy (an NVTX call inside a signal "
    "handler interrupting the same thread)",
    "records were dropped: a record was larger than a whole batch",
    "records were dropped: the agent's socket was full (the agent did not read the records as "
    "fast as the program made them)",
    "records were dropped: a batch could not be sent to the agent (no connection yet, or the "
    "program closed the library's socket)"};
std::atomic<uint32_t> g_drop_causes{0};
std::atomic<uint32_t> g_drop_causes_said{0};

void DroppedFor(DropCause cause, uint32_t n) {
  g_dropped.fetch_add(n, std::memory_order_relaxed);
  g_drop_causes.fetch_or(cause, std::memory_order_relaxed);
}

char g_socket_path[sizeof(sockaddr_un::sun_path)];

// Pre-flush hooks (AddPreFlushHook): a fixed table, so registering never allocates.
constexpr int kMaxPreFlushHooks = 4;
std::atomic<void (*)()> g_hooks[kMaxPreFlushHooks] = {};
std::atomic<int> g_hook_count{0};

// A process-wide connection to the agent. Datagrams on SOCK_SEQPACKET are sent whole, so threads
// share one. `fd` is published after `dev`/`ino` are written.
struct Connection {
  std::atomic<int> fd{-1};
  dev_t dev = 0;
  ino_t ino = 0;
};
// Two: the program's threads send on one, and threads that send in bursts and may wait for room
// (SendWaitScope: CUPTI's buffer thread) on the other. Sharing one, a burst filled the socket
// and the program's next batch found no room and was lost (a launch-bound PyTorch loop on one
// H100 lost 100-510 NVTX ranges a run that way).
pthread_mutex_t g_connect_mu = PTHREAD_MUTEX_INITIALIZER;
Connection g_program_conn;
Connection g_burst_conn;

// One thread's batch. `busy` is held by whoever is writing or sending it: almost always the
// owner (uncontended), occasionally FlushAll from another thread.
struct ThreadBuffer {
  std::atomic<bool> busy{false};
  TimeNs last_flush = 0;
  alignas(8) std::byte storage[wire::kMaxBatchBytes];
  wire::BatchBuilder builder{storage, sizeof(storage)};
};

// Every live thread's buffer, so FlushAll can reach them. Leaked on purpose: it must outlive
// static destructors and thread-local destructors that run during exit.
struct Registry {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  std::vector<ThreadBuffer*> live;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// Per-thread state. The pointers are trivially destructible, so they stay readable even after
// the retirer below has run at thread exit.
thread_local ThreadBuffer* t_buffer = nullptr;
thread_local bool t_retired = false;
thread_local uint32_t t_tid = 0;
thread_local TimeNs t_last_mpi_exit = 0;
// Until when this thread's sends may wait for socket space (SendWaitScope); 0: never wait.
thread_local TimeNs t_send_deadline = 0;

// Flushes and frees the thread's buffer when the thread exits.
struct ThreadRetirer {
  bool armed = false;
  ~ThreadRetirer();
};
thread_local ThreadRetirer t_retirer;

void Say(std::string_view text) {
  char line[512];
  int n = std::snprintf(line, sizeof(line), "rankscope-inject: %.*s\n",
                        static_cast<int>(text.size()), text.data());
  if (n <= 0) return;
  size_t len = std::min(static_cast<size_t>(n), sizeof(line) - 1);
  // write(2) rather than stdio: no locks to inherit across fork, nothing buffered at exit.
  ssize_t ignored = write(STDERR_FILENO, line, len);
  (void)ignored;
}

bool TryLock(ThreadBuffer* b, int spins) {
  for (int i = 0; i < spins; ++i) {
    if (!b->busy.exchange(true, std::memory_order_acquire)) return true;
  }
  return false;
}
void Unlock(ThreadBuffer* b) { b->busy.store(false, std::memory_order_release); }

bool AgentGoneErrno(int err) {
  return err == EPIPE || err == ECONNREFUSED || err == ENOENT || err == ECONNRESET ||
         err == ENOTCONN;
}

void AgentGone(const char* during, int err) {
  char why[300];
  std::snprintf(why, sizeof(why), "agent socket %s unusable (%s: %s); capture off", g_socket_path,
                during, std::strerror(err));
  g_active.store(false, std::memory_order_relaxed);
  if (!g_said_disabled.exchange(true)) Say(why);
}

// Returns `c`'s socket, connecting on first use; -1 if there is none right now (the caller drops
// its batch). Sets capture off when the agent is clearly gone.
int ConnectedFd(Connection& c) {
  int fd = c.fd.load(std::memory_order_acquire);
  if (fd >= 0) return fd;
  pthread_mutex_lock(&g_connect_mu);
  fd = c.fd.load(std::memory_order_acquire);
  if (fd < 0 && g_active.load(std::memory_order_relaxed)) {
    // Non-blocking, so a full listen backlog is EAGAIN (drop and retry later), never a hang.
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) {
      char why[160];
      std::snprintf(why, sizeof(why), "socket(AF_UNIX, SOCK_SEQPACKET) failed: %s; capture off",
                    std::strerror(errno));
      Disable(why);
      pthread_mutex_unlock(&g_connect_mu);
      return -1;
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, g_socket_path, sizeof(addr.sun_path));
    struct stat st {};
    if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && fstat(s, &st) == 0) {
      c.dev = st.st_dev;
      c.ino = st.st_ino;
      c.fd.store(s, std::memory_order_release);
      fd = s;
    } else {
      int err = errno;
      close(s);
      if (AgentGoneErrno(err)) {
        AgentGone("connect", err);
      } else if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
        char why[300];
        std::snprintf(why, sizeof(why), "connect to agent socket %s failed: %s; capture off",
                      g_socket_path, std::strerror(err));
        Disable(why);
      }
    }
  }
  pthread_mutex_unlock(&g_connect_mu);
  return fd;
}

// Sends one datagram on `fd` if `fd` is still `c`'s socket. Returns 0 or an errno value.
int SendOn(Connection& c, int fd, std::span<const std::byte> batch) {
  // A program that closes descriptors it does not own could have closed ours and reused the
  // number; never write our bytes into its file. One fstat per batch is cheap.
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_dev != c.dev || st.st_ino != c.ino) {
    int expected = fd;
    c.fd.compare_exchange_strong(expected, -1);  // reconnect next time; the fd is not ours
    return EBADF;
  }
  ssize_t n = send(fd, batch.data(), batch.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n == static_cast<ssize_t>(batch.size())) return 0;
  return n < 0 ? errno : EMSGSIZE;
}

// Waits until `fd` can take a datagram or the thread's send deadline passes; false on timeout.
bool WaitForRoom(int fd) {
  TimeNs left = t_send_deadline - MonotonicNow();
  if (left <= 0) return false;
  pollfd p{fd, POLLOUT, 0};
  int ms = static_cast<int>(std::min<TimeNs>(left / kNsPerMs + 1, 1000));
  return poll(&p, 1, ms) > 0 && (p.revents & POLLOUT) != 0;
}

// Sends one datagram, connecting first if needed; true if the agent got it. A full socket
// buffer loses the batch (the caller counts it; *socket_full set) unless the thread is in a
// SendWaitScope; a vanished agent switches capture off.
bool SendDatagram(std::span<const std::byte> batch, bool* socket_full) {
  Connection& c = t_send_deadline != 0 ? g_burst_conn : g_program_conn;
  int fd = ConnectedFd(c);
  if (fd < 0) return false;
  int err = SendOn(c, fd, batch);
  const auto full = [](int e) { return e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS; };
  while (full(err) && t_send_deadline != 0 && WaitForRoom(fd)) err = SendOn(c, fd, batch);
  if (err == 0) return true;
  *socket_full = full(err);
  if (full(err) || err == EINTR || err == EBADF) return false;
  if (AgentGoneErrno(err)) {
    AgentGone("send", err);
    return false;
  }
  char why[160];
  std::snprintf(why, sizeof(why), "send to agent failed: %s; capture off", std::strerror(err));
  Disable(why);
  return false;
}

// Sends `b`'s batch, if any, and empties it. The caller holds b->busy (or owns b exclusively).
void SendLocked(ThreadBuffer* b, TimeNs now) {
  b->last_flush = now;
  if (b->builder.empty()) return;
  uint32_t count = b->builder.record_count();
  if (!g_active.load(std::memory_order_relaxed)) {
    b->builder.Reset();
    return;
  }
  // Why records were lost since the last batch, said in this one (each cause once a process).
  // Claimed before saying, so that another thread's batch cannot say the same at once; given back
  // when this batch has no room for it or does not go out.
  const uint32_t pending = g_drop_causes.exchange(0, std::memory_order_relaxed);
  const uint32_t claimed =
      pending & ~g_drop_causes_said.fetch_or(pending, std::memory_order_relaxed);
  uint32_t told = 0;
  for (int i = 0; i < kDropCauses; ++i) {
    if ((claimed & (1u << i)) != 0 && b->builder.AppendNotice(kDropWhy[i])) told |= 1u << i;
  }
  auto give_back = [](uint32_t causes) {
    if (causes == 0) return;
    g_drop_causes_said.fetch_and(~causes, std::memory_order_relaxed);
    g_drop_causes.fetch_or(causes, std::memory_order_relaxed);
  };
  uint32_t dropped = g_dropped.exchange(0, std::memory_order_relaxed);
  std::span<const std::byte> batch =
      b->builder.Finish(g_pid.load(std::memory_order_relaxed), dropped, now);
  bool socket_full = false;
  if (SendDatagram(batch, &socket_full)) {
    give_back(claimed & ~told);  // no room in this batch: the next one says it
  } else {
    give_back(claimed);
    g_dropped.fetch_add(dropped, std::memory_order_relaxed);
    if (g_active.load(std::memory_order_relaxed)) {
      DroppedFor(socket_full ? kDropSocketFull : kDropNotSent, count);
    } else {
      g_dropped.fetch_add(count, std::memory_order_relaxed);  // capture went off: said so
    }
  }
  b->builder.Reset();
}

ThreadBuffer* CreateThreadBuffer() {
  auto* b = new (std::nothrow) ThreadBuffer;
  if (b == nullptr) return nullptr;
  b->last_flush = MonotonicNow();
  Registry& reg = registry();
  pthread_mutex_lock(&reg.mu);
  bool registered = true;
  try {
    reg.live.push_back(b);
  } catch (...) {
    registered = false;
  }
  pthread_mutex_unlock(&reg.mu);
  if (!registered) {
    delete b;
    return nullptr;
  }
  t_buffer = b;
  t_retirer.armed = true;  // first touch registers the thread-exit destructor
  return b;
}

ThreadBuffer* ThisThreadBuffer() {
  ThreadBuffer* b = t_buffer;
  if (b != nullptr) return b;
  if (t_retired) return nullptr;  // a record from a thread-local destructor after ours ran
  return CreateThreadBuffer();
}

ThreadRetirer::~ThreadRetirer() {
  ThreadBuffer* b = t_buffer;
  if (b == nullptr) return;
  t_buffer = nullptr;
  t_retired = true;
  Registry& reg = registry();
  pthread_mutex_lock(&reg.mu);
  reg.live.erase(std::remove(reg.live.begin(), reg.live.end(), b), reg.live.end());
  pthread_mutex_unlock(&reg.mu);
  // Unreachable by FlushAll now (it walks the registry under the same mutex), so no lock needed.
  SendLocked(b, MonotonicNow());
  delete b;
}

// Appends one record with `append(builder)`, sending the batch first if it is full.
template <typename AppendFn>
void Emit(TimeNs now, AppendFn append) {
  if (!Capturing()) return;  // dormant: nothing is recorded, nothing is lost
  ThreadBuffer* b = ThisThreadBuffer();
  if (b == nullptr) {
    DroppedFor(kDropNoBuffer, 1);
    return;
  }
  if (!TryLock(b, kBusySpins)) {
    DroppedFor(kDropBusy, 1);
    return;
  }
  if (!append(b->builder)) {
    SendLocked(b, now);
    if (!append(b->builder)) DroppedFor(kDropTooLarge, 1);
  }
  if (now - b->last_flush > kFlushInterval) SendLocked(b, now);
  Unlock(b);
}

// fork(): the child keeps only the forking thread; it must not share the parent's connection
// or resend the parent's records, and it reports with its own pid.
void AtForkPrepare() {
  pthread_mutex_lock(&g_connect_mu);
  pthread_mutex_lock(&registry().mu);
}
void AtForkParent() {
  pthread_mutex_unlock(&registry().mu);
  pthread_mutex_unlock(&g_connect_mu);
}
void AtForkChild() {
  Registry& reg = registry();
  for (ThreadBuffer* b : reg.live) {
    if (b != t_buffer) delete b;  // their threads do not exist in the child
  }
  reg.live.clear();
  if (t_buffer != nullptr) {
    reg.live.push_back(t_buffer);  // capacity is there: the vector held at least this one
    t_buffer->builder.Reset();
    t_buffer->busy.store(false, std::memory_order_relaxed);
    t_buffer->last_flush = MonotonicNow();
  }
  for (Connection* c : {&g_program_conn, &g_burst_conn}) {
    int fd = c->fd.exchange(-1);
    if (fd >= 0) close(fd);  // the parent's connections; the child reconnects lazily
  }
  g_dropped.store(0, std::memory_order_relaxed);
  g_drop_causes.store(0, std::memory_order_relaxed);
  g_drop_causes_said.store(0, std::memory_order_relaxed);  // the child says its own
  g_pid.store(static_cast<uint32_t>(getpid()), std::memory_order_relaxed);
  t_tid = 0;
  pthread_mutex_unlock(&reg.mu);
  pthread_mutex_unlock(&g_connect_mu);
}

// The agent's control page; null without one (always capturing).
ControlPage* g_control = nullptr;

// on_exit handler: the program's exit status for an agent that is not its parent (it cannot
// wait() for it). Only the rank's own process writes it, not children that inherited us.
void RecordExit(int status, void*) {
  if (g_control == nullptr ||
      g_control->program_pid.load(std::memory_order_acquire) != static_cast<int32_t>(getpid())) {
    return;
  }
  g_control->exit_code.store(status & 0xff, std::memory_order_relaxed);
  g_control->exited.store(1, std::memory_order_release);
  WakeAll(&g_control->exited);
  if (!g_active.load(std::memory_order_relaxed)) return;  // the agent is gone: nobody reads
  // The agent beside the program reads its last figures now, while they are readable (it is
  // not the parent: once the program is reaped they are gone). 100 ms at most.
  const TimeNs deadline = MonotonicNow() + 100 * kNsPerMs;
  for (TimeNs left = 100 * kNsPerMs; left > 0 && g_control->sampled.load() == 0;
       left = deadline - MonotonicNow()) {
    WaitWhile(&g_control->sampled, 0, left);
  }
}

void MapControlPage() {
  const char* path = std::getenv("RANKSCOPE_CONTROL_FILE");
  if (path == nullptr || path[0] == '\0') return;
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    Say("cannot open RANKSCOPE_CONTROL_FILE; capturing from the start");
    return;
  }
  void* map = mmap(nullptr, kControlPageSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    Say("cannot map RANKSCOPE_CONTROL_FILE; capturing from the start");
    return;
  }
  auto* page = static_cast<ControlPage*>(map);
  if (page->magic != kControlPageMagic) {
    Say("RANKSCOPE_CONTROL_FILE is not a rankscope control page; capturing from the start");
    munmap(map, kControlPageSize);
    return;
  }
  g_control = page;
  on_exit(RecordExit, nullptr);
}

// Reads the configuration once, when the library is loaded (LD_PRELOAD or NVTX's dlopen).
__attribute__((constructor)) void Configure() {
  const char* path = std::getenv("RANKSCOPE_IPC_SOCKET");
  if (path == nullptr || path[0] == '\0') return;  // inert: no agent asked for us
  if (std::strlen(path) >= sizeof(g_socket_path)) {
    Say("RANKSCOPE_IPC_SOCKET is longer than an AF_UNIX path may be (107 bytes); capture off");
    g_said_disabled.store(true);
    return;
  }
  std::strncpy(g_socket_path, path, sizeof(g_socket_path) - 1);
  g_pid.store(static_cast<uint32_t>(getpid()), std::memory_order_relaxed);
  MapControlPage();
  registry();
  if (pthread_atfork(AtForkPrepare, AtForkParent, AtForkChild) != 0) {
    Say("pthread_atfork failed; capture off");
    g_said_disabled.store(true);
    return;
  }
  g_active.store(true, std::memory_order_release);
}

// Runs after main's thread-local destructors and the program's atexit handlers.
__attribute__((destructor)) void FlushAtExit() { FlushAll(); }

}  // namespace

bool Active() { return g_active.load(std::memory_order_relaxed); }

bool Capturing() {
  return g_control == nullptr || g_control->capturing.load(std::memory_order_relaxed) != 0;
}

uint32_t ThreadId() {
  uint32_t tid = t_tid;
  if (tid == 0) {
    tid = static_cast<uint32_t>(gettid());
    t_tid = tid;
  }
  return tid;
}

namespace {

// The control page's open-call slot when the calling thread is the rank's main thread (its tid
// is the program's pid, which the agent put on the page), else null.
OpenCallSlot* MainThreadSlot() {
  if (g_control == nullptr) return nullptr;
  const int32_t program = g_control->program_pid.load(std::memory_order_relaxed);
  return program > 0 && ThreadId() == static_cast<uint32_t>(program) ? &g_control->open_call
                                                                     : nullptr;
}

// What the slot says a call or loop waits on: the fields besides its times.
struct SlotCall {
  OpenCallKind kind;
  uint32_t op;
  uint64_t comm_id;
  uint64_t seq;
  int32_t comm_size;
  int32_t peer;
};

SlotCall SlotCallOf(const CollectiveRecord& r) {
  return {
      OpenCallKind::kCollective, static_cast<uint32_t>(r.op), r.comm_id, r.seq, r.comm_size, -1};
}

SlotCall SlotCallOf(const P2PRecord& r) {
  // A Wait on a request says what the request was (kIrecv, kIsend, ...).
  const P2PKind kind = r.kind == P2PKind::kWait ? r.completed : r.kind;
  return {OpenCallKind::kPointToPoint,          static_cast<uint32_t>(kind), r.comm_id, 0, 0,
          r.world_peer >= 0 ? r.world_peer : -1};
}

// Fills the slot's fields, then publishes `enter` (ReadOpenCall checks it is unchanged).
// `poll`: a polling loop's latest poll; 0 for a blocking call.
void Open(OpenCallSlot* slot, const SlotCall& c, TimeNs enter, TimeNs poll) {
  slot->enter_ns.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot->kind.store(static_cast<uint32_t>(c.kind), std::memory_order_relaxed);
  slot->op.store(c.op, std::memory_order_relaxed);
  slot->comm_id.store(c.comm_id, std::memory_order_relaxed);
  slot->seq.store(c.seq, std::memory_order_relaxed);
  slot->comm_size.store(c.comm_size, std::memory_order_relaxed);
  slot->peer.store(c.peer, std::memory_order_relaxed);
  slot->poll_ns.store(static_cast<uint64_t>(poll), std::memory_order_relaxed);
  slot->enter_ns.store(enter > 0 ? static_cast<uint64_t>(enter) : 1, std::memory_order_release);
}

}  // namespace

OpenCallScope::OpenCallScope(const CollectiveRecord& r, TimeNs enter) {
  OpenCallSlot* slot = MainThreadSlot();
  if (slot == nullptr) return;
  Open(slot, SlotCallOf(r), enter, 0);
  open_ = true;
}

OpenCallScope::OpenCallScope(const P2PRecord& r, TimeNs enter) {
  OpenCallSlot* slot = MainThreadSlot();
  if (slot == nullptr) return;
  Open(slot, SlotCallOf(r), enter, 0);
  open_ = true;
}

OpenCallScope::~OpenCallScope() {
  if (open_) g_control->open_call.enter_ns.store(0, std::memory_order_release);
}

bool StillPolling(TimeNs run_start, TimeNs poll_exit) {
  OpenCallSlot* slot = MainThreadSlot();
  if (slot == nullptr) return true;
  if (slot->poll_ns.load(std::memory_order_relaxed) == 0 ||
      slot->enter_ns.load(std::memory_order_relaxed) != static_cast<uint64_t>(run_start)) {
    return false;
  }
  slot->poll_ns.store(static_cast<uint64_t>(poll_exit), std::memory_order_relaxed);
  return true;
}

namespace {

// Whether `slot` holds a polling loop for the same thing as `c` that this poll continues: its
// latest poll less than kPollStaleNs before `poll_exit`, and no MPI record emitted since (a loop
// preempted between two polls, or with a little work between them, is the same wait; its since
// stays). Then only the latest poll is noted.
bool ContinuesLoop(OpenCallSlot* slot, const SlotCall& c, TimeNs poll_exit) {
  const uint64_t last = slot->poll_ns.load(std::memory_order_relaxed);
  if (last == 0 || slot->enter_ns.load(std::memory_order_relaxed) == 0 ||
      static_cast<uint64_t>(poll_exit) - last >= kPollStaleNs ||
      LastMpiRecordExit() > static_cast<TimeNs>(last) ||
      slot->kind.load(std::memory_order_relaxed) != static_cast<uint32_t>(c.kind) ||
      slot->op.load(std::memory_order_relaxed) != c.op ||
      slot->comm_id.load(std::memory_order_relaxed) != c.comm_id ||
      slot->seq.load(std::memory_order_relaxed) != c.seq ||
      slot->peer.load(std::memory_order_relaxed) != c.peer) {
    return false;
  }
  slot->poll_ns.store(static_cast<uint64_t>(poll_exit), std::memory_order_relaxed);
  return true;
}

void NoteLoop(const SlotCall& c, TimeNs run_start, TimeNs poll_exit) {
  OpenCallSlot* slot = MainThreadSlot();
  if (slot != nullptr && !ContinuesLoop(slot, c, poll_exit)) Open(slot, c, run_start, poll_exit);
}

}  // namespace

void NotePolling(const P2PRecord& r, TimeNs run_start, TimeNs poll_exit) {
  NoteLoop(SlotCallOf(r), run_start, poll_exit);
}

void NotePolling(const CollectiveRecord& r, TimeNs run_start, TimeNs poll_exit) {
  NoteLoop(SlotCallOf(r), run_start, poll_exit);
}

void EndPolling() {
  OpenCallSlot* slot = MainThreadSlot();
  if (slot == nullptr || slot->poll_ns.load(std::memory_order_relaxed) == 0) return;
  slot->enter_ns.store(0, std::memory_order_release);
  slot->poll_ns.store(0, std::memory_order_relaxed);
}

void EmitCollective(const CollectiveRecord& r) {
  t_last_mpi_exit = r.exit;
  Emit(r.exit, [&](wire::BatchBuilder& bb) { return bb.AppendCollective(r); });
}

void EmitP2P(const P2PRecord& r) {
  t_last_mpi_exit = r.exit;
  Emit(r.exit, [&](wire::BatchBuilder& bb) { return bb.AppendP2P(r); });
}

void EmitMpiCall(const MpiCallRecord& r) {
  t_last_mpi_exit = r.exit;
  Emit(r.exit, [&](wire::BatchBuilder& bb) { return bb.AppendMpiCall(r); });
}

TimeNs LastMpiRecordExit() { return t_last_mpi_exit; }

void EmitRange(std::string_view domain, std::string_view name, TimeNs start, TimeNs end,
               uint32_t tid, uint32_t depth) {
  Emit(end, [&](wire::BatchBuilder& bb) {
    return bb.AppendRange(domain, name, start, end, tid, depth);
  });
}

void EmitMark(std::string_view domain, std::string_view name, TimeNs time, uint32_t tid) {
  Emit(time, [&](wire::BatchBuilder& bb) { return bb.AppendMark(domain, name, time, tid); });
}

void EmitGpuActivity(const GpuActivityRecord& r) {
  Emit(MonotonicNow(), [&](wire::BatchBuilder& bb) { return bb.AppendGpuActivity(r); });
}

void CountDropped(uint32_t n) { g_dropped.fetch_add(n, std::memory_order_relaxed); }

void NoticeOnce(std::atomic<bool>& said, std::string_view text) {
  if (!Active() || said.exchange(true)) return;
  Emit(MonotonicNow(), [&](wire::BatchBuilder& bb) { return bb.AppendNotice(text); });
}

void Disable(std::string_view why) {
  bool was_active = g_active.exchange(false, std::memory_order_relaxed);
  if (!g_said_disabled.exchange(true)) Say(why);
  if (!was_active) return;
  // Tell the agent on a one-record batch of our own (the thread's buffer may be the one whose
  // failure brought us here), and only on an existing connection. Failure here says nothing.
  int fd = g_program_conn.fd.load(std::memory_order_acquire);
  if (fd < 0) return;
  alignas(8) std::byte storage[wire::kHeaderSize + wire::kRecordHeaderSize + 320];
  wire::BatchBuilder notice(storage, sizeof(storage));
  char text[300];
  std::snprintf(text, sizeof(text), "disabled: %.*s", static_cast<int>(why.size()), why.data());
  if (notice.AppendNotice(text)) {
    SendOn(g_program_conn, fd,
           notice.Finish(g_pid.load(std::memory_order_relaxed), 0, MonotonicNow()));
  }
}

void FlushAll() {
  if (!Active()) return;
  int hooks = g_hook_count.load(std::memory_order_acquire);
  for (int i = 0; i < hooks; ++i) {
    if (auto* hook = g_hooks[i].load(std::memory_order_acquire); hook != nullptr) hook();
  }
  TimeNs now = MonotonicNow();
  Registry& reg = registry();
  pthread_mutex_lock(&reg.mu);
  for (ThreadBuffer* b : reg.live) {
    if (!TryLock(b, kBusySpins)) continue;
    SendLocked(b, now);
    Unlock(b);
  }
  pthread_mutex_unlock(&reg.mu);
}

SendWaitScope::SendWaitScope(TimeNs deadline) { t_send_deadline = deadline; }
SendWaitScope::~SendWaitScope() { t_send_deadline = 0; }

void FlushThisThread() {
  ThreadBuffer* b = t_buffer;
  if (b == nullptr || !TryLock(b, kBusySpins)) return;
  SendLocked(b, MonotonicNow());
  Unlock(b);
}

bool AddPreFlushHook(void (*hook)()) {
  int slot = g_hook_count.load(std::memory_order_relaxed);
  do {
    if (slot >= kMaxPreFlushHooks) return false;
  } while (!g_hook_count.compare_exchange_weak(slot, slot + 1, std::memory_order_acq_rel));
  // A FlushAll that sees the new count before the store finds nullptr and skips the slot.
  g_hooks[slot].store(hook, std::memory_order_release);
  return true;
}

}  // namespace rankscope::inject
