package runtimeconfig

import (
	"sync"

	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

// installPool makes a new Pool gRPC's default (experimental.SetDefaultBufferPool), for every
// client and server made after it: before any exists (the call is not safe beside gRPC's use of
// the pool).
func installPool() { experimental.SetDefaultBufferPool(new(Pool)) }

// Pool is the pool of buffers gRPC reads messages into, for every client and server of the
// process once Apply has installed it: the SDK harness's data and state channels (what a
// Dataflow worker receives its elements and state on), the Pub/Sub client's Pulls, Secret
// Manager's calls. It is gRPC's default pool (mem.DefaultBufferPool, grpc-go 1.84) without the
// clearing: buffers of 256 B, 4 KiB, 16 KiB (the largest HTTP/2 frame gRPC reads), 32 KiB and
// 1 MiB, each size in a sync.Pool of its own, and larger ones in one more. Get(n) returns a
// buffer of length n whose bytes are whatever it last held; Put takes back a buffer Get
// returned, at any length. The zero Pool is ready to use.
//
// gRPC's default clears the whole capacity of every buffer it hands out again, so that a reader
// of bytes that were not written finds zeros rather than an earlier message's: a message of
// 40 KiB read into a buffer of the 1 MiB tier clears 1 MiB. gRPC writes each buffer it gets
// before it reads it (its transport pools its own I/O buffers without clearing; grpc-go's
// maintainers put the clearing at about 2% of CPU in grpc/grpc-go#8790 and #8910, and keep an
// uncleared pool internal), and the pipeline's process holds one job's messages only. In
// Dataflow's shape (a message an element over the data channel) leaving the clearing out took
// the SDK process from 2.44 to 2.30 CPU-s per 100,000 demo messages (medians of six rounds;
// docs/operations.md, "Cost per message").
type Pool struct {
	tiers [len(tierSizes)]sync.Pool
	large sync.Pool
}

// tierSizes are the capacities of the tiers, ascending (grpc-go's defaultBufferPoolSizeExponents).
var tierSizes = [...]int{1 << 8, 1 << 12, 1 << 14, 1 << 15, 1 << 20}

var _ mem.BufferPool = (*Pool)(nil)

// Get returns a buffer of length n from the smallest tier that holds n bytes, or one of the
// large buffers; a new one when the pool has none.
func (p *Pool) Get(n int) *[]byte {
	for i, size := range tierSizes {
		if n <= size {
			if b, ok := p.tiers[i].Get().(*[]byte); ok {
				*b = (*b)[:n]
				return b
			}
			b := make([]byte, n, size)
			return &b
		}
	}
	if b, ok := p.large.Get().(*[]byte); ok {
		if cap(*b) >= n {
			*b = (*b)[:n]
			return b
		}
		p.large.Put(b)
	}
	// Rounded up to a page, as gRPC's pool does: sizes that vary a little reuse one buffer.
	b := make([]byte, n, (n+4095)&^4095)
	return &b
}

// Put keeps b in the largest tier whose size its capacity reaches (so Get hands it out only
// for a length it holds), or with the large buffers above 1 MiB; a buffer smaller than 256 B
// is left to the garbage collector.
func (p *Pool) Put(b *[]byte) {
	c := cap(*b)
	if c > tierSizes[len(tierSizes)-1] {
		p.large.Put(b)
		return
	}
	for i := len(tierSizes) - 1; i >= 0; i-- {
		if c >= tierSizes[i] {
			p.tiers[i].Put(b)
			return
		}
	}
}
