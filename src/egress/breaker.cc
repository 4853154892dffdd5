#include "egress/breaker.h"

namespace isb::egress {

CircuitBreaker::Ticket CircuitBreaker::Admit(SteadyTime now) {
  MutexLock lock(mu_);
  switch (state_) {
    case State::kClosed:
      return {true, false, generation_};
    case State::kHalfOpen:
      return {false, false, generation_};
    case State::kOpen:
      if (now - opened_at_ < open_for_) return {false, false, generation_};
      state_ = State::kHalfOpen;
      ++generation_;
      return {true, true, generation_};
  }
  return {};
}

void CircuitBreaker::Record(const Ticket& ticket, bool success, SteadyTime now) {
  MutexLock lock(mu_);
  if (!ticket.admitted || ticket.generation != generation_) return;
  if (ticket.probe) {
    if (state_ != State::kHalfOpen) return;
    if (success) {
      state_ = State::kClosed;
      failures_ = 0;
      ++generation_;
    } else {
      Open(now);
    }
    return;
  }
  if (state_ != State::kClosed) return;
  if (success) {
    failures_ = 0;
  } else if (++failures_ >= threshold_) {
    Open(now);
  }
}

void CircuitBreaker::Open(SteadyTime now) {
  state_ = State::kOpen;
  opened_at_ = now;
  failures_ = 0;
  ++generation_;
}

CircuitBreaker::State CircuitBreaker::state() const {
  MutexLock lock(mu_);
  return state_;
}

}  // namespace isb::egress
