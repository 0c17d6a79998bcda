package chclient

import (
	"context"
	"math/rand/v2"
	"time"
)

// Retry is the retry policy of an INSERT: up to MaxRetries retries after the first attempt, with
// exponential backoff and jitter: the n-th retry waits a random time between half and all of
// min(MaxBackoff, InitialBackoff × 2^(n-1)).
type Retry struct {
	MaxRetries     int
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
}

// SetupRetry is the retry policy of a worker's start-up work against ClickHouse (connecting,
// reading the schema): a worker that starts while the server is briefly unreachable waits for it,
// about a minute and a half at most, instead of failing its bundle.
var SetupRetry = Retry{MaxRetries: 12, InitialBackoff: 500 * time.Millisecond, MaxBackoff: 10 * time.Second}

// backoff returns the wait before retry n (1-based).
func (r Retry) backoff(n int) time.Duration {
	d := r.InitialBackoff
	for i := 1; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, r.MaxBackoff)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// Do calls fn until it succeeds, the retries are spent or ctx ends. onRetry is called before each
// retry with its number and the error that caused it. It returns the number of attempts made and
// the last error.
func (r Retry) Do(ctx context.Context, fn func() error, onRetry func(n int, err error)) (attempts int, err error) {
	return r.DoIf(ctx, fn, func(error) bool { return true }, onRetry)
}

// DoIf is Do that retries only the errors for which retryable is true; others return at once.
func (r Retry) DoIf(ctx context.Context, fn func() error, retryable func(error) bool, onRetry func(n int, err error)) (attempts int, err error) {
	for attempts = 1; ; attempts++ {
		if err = fn(); err == nil || attempts > r.MaxRetries || !retryable(err) {
			return attempts, err
		}
		onRetry(attempts, err)
		t := time.NewTimer(r.backoff(attempts))
		select {
		case <-ctx.Done():
			t.Stop()
			return attempts, err
		case <-t.C:
		}
	}
}
