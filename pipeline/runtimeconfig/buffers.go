package runtimeconfig

import (
	"sync"

	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

// installPool makes a new Pool gRPC's default (experimental.SetDefaultBufferPool): of every
// client made after it, and of the codec of every client and server. A server's transport keeps
// the default it saw when the grpc package started (grpc-go 1.84's defaultServerOptions), so the
// frames a server in this process reads (prism's, in a local run) go through gRPC's own pool.
// Call it before any client exists (the call is not safe beside gRPC's use of the pool).
func installPool() { experimental.SetDefaultBufferPool(new(Pool)) }

// Pool is the pool of buffers gRPC reads and writes messages in, once Apply has installed it:
// the SDK harness's data and state channels (what a Dataflow worker receives its elements and
// state on), the Pub/Sub client's Pulls, Secret Manager's calls. It is gRPC's default pool
// (mem.DefaultBufferPool, grpc-go 1.84) with less clearing, and with its larger buffers bounded:
// buffers of 256 B, 4 KiB, 16 KiB (the largest HTTP/2 frame gRPC reads), 32 KiB and 1 MiB, each
// size in a sync.Pool of its own, and larger ones in a list of at most maxLargeKept bytes. Get(n)
// returns a buffer of length n, all zeros; Put takes back a buffer Get returned, at any length.
// The zero Pool is ready to use.
//
// gRPC's default keeps every larger buffer given back in one sync.Pool until the garbage
// collector empties it, and hands one out only when it holds the length asked for (else it puts
// it back and allocates another): with messages of a megabyte and more, of lengths that vary,
// the buffers piled up between collections. 1,500 messages of 1 MiB of random base64 peaked at
// 6.97 GB with such a pool, and at 4.53 GB with none above 1 MiB (the local runner in the
// process, the default parameters; docs/operations.md, "Large messages").
//
// gRPC's default clears the whole capacity of a buffer it hands out again: a message of 40 KiB
// read into a buffer of the 1 MiB tier clears 1 MiB. Pool clears the n bytes handed out, so
// what a reader can see without reslicing is zeros where nothing was written, as with gRPC's
// default. That matters: gRPC's proto codec marshals a message into Get(proto.Size(m)) and sends
// the whole length, so a message changed while it is marshalled (a race in its sender) would
// send an earlier message's bytes where the default sends zeros, which the receiver refuses.
// gRPC's maintainers put the clearing at about 2% of CPU (grpc/grpc-go#8790, #8910). In
// Dataflow's shape (a message an element over the data channel) clearing the length, not the
// capacity, took the SDK process from 2.53 to 2.38 CPU-s per 100,000 demo messages (medians of
// five rounds; docs/operations.md, "Cost per message").
type Pool struct {
	tiers [len(tierSizes)]sync.Pool

	mu    sync.Mutex
	large []*[]byte // the larger buffers kept, at most maxLargeKept bytes of capacity in all
	kept  int       // their capacities, summed
}

// maxLargeKept bounds the capacity of the buffers above 1 MiB that a Pool keeps (64 MiB): what
// the demo's Pulls and the data channel's elements reuse, and no more.
const maxLargeKept = 64 << 20

// tierSizes are the capacities of the tiers, ascending (grpc-go's defaultBufferPoolSizeExponents).
var tierSizes = [...]int{1 << 8, 1 << 12, 1 << 14, 1 << 15, 1 << 20}

var _ mem.BufferPool = (*Pool)(nil)

// Get returns a buffer of length n, cleared, from the smallest tier that holds n bytes, or one
// of the large buffers; a new one (which Go clears) when the pool has none.
func (p *Pool) Get(n int) *[]byte {
	for i, size := range tierSizes {
		if n <= size {
			if b, ok := p.tiers[i].Get().(*[]byte); ok {
				return cleared(b, n)
			}
			b := make([]byte, n, size)
			return &b
		}
	}
	if b := p.takeLarge(n); b != nil {
		return cleared(b, n)
	}
	// Rounded up to a page, as gRPC's pool does: sizes that vary a little reuse one buffer.
	b := make([]byte, n, (n+4095)&^4095)
	return &b
}

// cleared cuts a pooled buffer to length n and clears that length (not the capacity beyond).
func cleared(b *[]byte, n int) *[]byte {
	*b = (*b)[:n]
	clear(*b)
	return b
}

// takeLarge takes from the larger buffers kept the smallest that holds n bytes, or returns nil.
func (p *Pool) takeLarge(n int) *[]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, b := range p.large {
		if c := cap(*b); c >= n && (best < 0 || c < cap(*p.large[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := p.large[best]
	p.large[best] = p.large[len(p.large)-1]
	p.large[len(p.large)-1] = nil
	p.large = p.large[:len(p.large)-1]
	p.kept -= cap(*b)
	return b
}

// Put keeps b in the largest tier whose size its capacity reaches (so Get hands it out only
// for a length it holds), or with the larger buffers above 1 MiB while they stay within
// maxLargeKept (a larger buffer beyond that, and one smaller than 256 B, is left to the garbage
// collector).
func (p *Pool) Put(b *[]byte) {
	c := cap(*b)
	if c > tierSizes[len(tierSizes)-1] {
		p.mu.Lock()
		if p.kept+c <= maxLargeKept {
			p.large = append(p.large, b)
			p.kept += c
		}
		p.mu.Unlock()
		return
	}
	for i := len(tierSizes) - 1; i >= 0; i-- {
		if c >= tierSizes[i] {
			p.tiers[i].Put(b)
			return
		}
	}
}
