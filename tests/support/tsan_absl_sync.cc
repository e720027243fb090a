// ThreadSanitizer builds only (ONNXSERVE_SANITIZE=thread): tells TSan about absl::Mutex and absl::CondVar.
//
// Debian's abseil is not built with -fsanitize=thread, so its Mutex carries none of the annotations that
// abseil compiles in under TSan: locking one established no happens-before for TSan, and every access our code
// (or gRPC, whose mutexes are absl's) guards with one was reported as a race. The executable's definitions
// below take precedence over the library's, for our code and for the shared libraries that call them; each
// calls the library's own (dlsym RTLD_NEXT) inside the annotations abseil itself would have made, when the
// caller is the executable: gRPC also locks its mutexes inside abseil, past the PLT, so annotating its calls
// too showed TSan locks taken twice and released unheld. Its mutexes stay invisible, as tests/tsan.supp says.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/synchronization/mutex.h"

#define ONNXSERVE_STRINGIFY2(x) #x
#define ONNXSERVE_STRINGIFY(x) ONNXSERVE_STRINGIFY2(x)

namespace {

// The library's definition of absl::<suffix>: suffix is the rest of the mangled name after the namespace,
// e.g. "5Mutex4LockEv".
template <typename Fn>
Fn Real(const char* suffix) {
  const char* ns = ONNXSERVE_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name = "_ZN4absl" + std::to_string(std::strlen(ns)) + ns + suffix;
  void* fn = dlsym(RTLD_NEXT, name.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: no %s in the abseil library\n", name.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

using MutexFn = void (*)(absl::Mutex*);
using TryFn = bool (*)(absl::Mutex*);
using CondFn = void (*)(absl::Mutex*, const absl::Condition&);
using CondTimeoutFn = bool (*)(absl::Mutex*, const absl::Condition&, absl::Duration);
using CondDeadlineFn = bool (*)(absl::Mutex*, const absl::Condition&, absl::Time);

extern "C" char __executable_start;
extern "C" char etext;

// Whether `caller` (a return address) lies in the executable's code rather than a shared library's.
bool FromExecutable(const void* caller) { return caller >= &__executable_start && caller < &etext; }

#define ONNXSERVE_ANNOTATED FromExecutable(__builtin_return_address(0))

// A wait that releases `mu` and holds it again on return (Await, CondVar::Wait): an unlock, then a lock.
template <typename Wait>
auto Released(bool annotated, absl::Mutex* mu, Wait wait) {
  if (annotated) {
    __tsan_mutex_pre_unlock(mu, 0);
    __tsan_mutex_post_unlock(mu, 0);
    __tsan_mutex_pre_lock(mu, 0);
  }
  auto result = wait();
  if (annotated) __tsan_mutex_post_lock(mu, 0, 0);
  return result;
}

// A lock, or with __tsan_mutex_try_lock in `flags` an attempt whose result is true when it took the lock.
template <typename Lock>
auto Locked(bool annotated, absl::Mutex* mu, unsigned flags, Lock lock) {
  if (annotated) __tsan_mutex_pre_lock(mu, flags);
  auto result = lock();
  const bool failed = (flags & __tsan_mutex_try_lock) != 0 && !result;
  if (annotated) __tsan_mutex_post_lock(mu, failed ? flags | __tsan_mutex_try_lock_failed : flags, 0);
  return result;
}

void Unlocked(bool annotated, absl::Mutex* mu, unsigned flags, MutexFn unlock) {
  if (annotated) __tsan_mutex_pre_unlock(mu, flags);
  unlock(mu);
  if (annotated) __tsan_mutex_post_unlock(mu, flags);
}

}  // namespace

namespace absl {

Mutex::~Mutex() {
  static const auto real = Real<MutexFn>("5MutexD2Ev");
  if (ONNXSERVE_ANNOTATED) __tsan_mutex_destroy(this, 0);
  real(this);
}

void Mutex::Lock() {
  static const auto real = Real<MutexFn>("5Mutex4LockEv");
  Locked(ONNXSERVE_ANNOTATED, this, 0, [&] { return (real(this), true); });
}

void Mutex::ReaderLock() {
  static const auto real = Real<MutexFn>("5Mutex10ReaderLockEv");
  Locked(ONNXSERVE_ANNOTATED, this, __tsan_mutex_read_lock, [&] { return (real(this), true); });
}

void Mutex::Unlock() {
  static const auto real = Real<MutexFn>("5Mutex6UnlockEv");
  Unlocked(ONNXSERVE_ANNOTATED, this, 0, real);
}

void Mutex::ReaderUnlock() {
  static const auto real = Real<MutexFn>("5Mutex12ReaderUnlockEv");
  Unlocked(ONNXSERVE_ANNOTATED, this, __tsan_mutex_read_lock, real);
}

bool Mutex::TryLock() {
  static const auto real = Real<TryFn>("5Mutex7TryLockEv");
  return Locked(ONNXSERVE_ANNOTATED, this, __tsan_mutex_try_lock, [&] { return real(this); });
}

bool Mutex::ReaderTryLock() {
  static const auto real = Real<TryFn>("5Mutex13ReaderTryLockEv");
  return Locked(ONNXSERVE_ANNOTATED, this, __tsan_mutex_try_read_lock, [&] { return real(this); });
}

void Mutex::LockWhen(const Condition& cond) {
  static const auto real = Real<CondFn>("5Mutex8LockWhenERKNS0_9ConditionE");
  Locked(ONNXSERVE_ANNOTATED, this, 0, [&] { return (real(this, cond), true); });
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static const auto real = Real<CondFn>("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  Locked(ONNXSERVE_ANNOTATED, this, __tsan_mutex_read_lock, [&] { return (real(this, cond), true); });
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = Real<CondTimeoutFn>("5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return Locked(ONNXSERVE_ANNOTATED, this, 0, [&] { return real(this, cond, timeout); });
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<CondDeadlineFn>("5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Locked(ONNXSERVE_ANNOTATED, this, 0, [&] { return real(this, cond, deadline); });
}

void Mutex::Await(const Condition& cond) {
  static const auto real = Real<CondFn>("5Mutex5AwaitERKNS0_9ConditionE");
  Released(ONNXSERVE_ANNOTATED, this, [&] { return (real(this, cond), 0); });
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = Real<CondTimeoutFn>("5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return Released(ONNXSERVE_ANNOTATED, this, [&] { return real(this, cond, timeout); });
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<CondDeadlineFn>("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Released(ONNXSERVE_ANNOTATED, this, [&] { return real(this, cond, deadline); });
}

void CondVar::Wait(Mutex* mu) {
  static const auto real = Real<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  Released(ONNXSERVE_ANNOTATED, mu, [&] { return (real(this, mu), 0); });
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static const auto real =
      Real<bool (*)(CondVar*, Mutex*, Duration)>("7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  return Released(ONNXSERVE_ANNOTATED, mu, [&] { return real(this, mu, timeout); });
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static const auto real =
      Real<bool (*)(CondVar*, Mutex*, Time)>("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  return Released(ONNXSERVE_ANNOTATED, mu, [&] { return real(this, mu, deadline); });
}

}  // namespace absl
