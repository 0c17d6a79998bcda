package runtimeconfig

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
)

// poisoned is the default pool of this test binary's gRPC clients and codecs (TestMain): a Pool
// that fills each buffer it takes back with 0xA5, over its whole capacity, so that what Pool
// does not clear again (the capacity beyond the length Get hands out) holds no zeros.
var poisoned = &poisoning{}

type poisoning struct {
	Pool
	gets, puts atomic.Int64
}

func (p *poisoning) Get(n int) *[]byte { p.gets.Add(1); return p.Pool.Get(n) }

func (p *poisoning) Put(b *[]byte) {
	p.puts.Add(1)
	all := (*b)[:cap(*b)]
	for i := range all {
		all[i] = 0xA5
	}
	p.Pool.Put(b)
}

// TestGet: every length gets a buffer of that length, all zeros, and room for it, from each tier,
// across the tiers' bounds and above the largest, new or taken back after it was overwritten.
func TestGet(t *testing.T) {
	p := &poisoning{}
	lengths := []int{0, 1, 255, 256, 257, 4095, 4096, 4097, 16 << 10, 16<<10 + 1, 32 << 10, 32<<10 + 1, 1 << 20, 1<<20 + 1, 3 << 20}
	for round := range 3 { // new buffers, then buffers taken back in other tiers' sizes
		for _, n := range lengths {
			b := p.Get(n)
			if len(*b) != n || cap(*b) < n {
				t.Fatalf("round %d: Get(%d) = len %d, cap %d", round, n, len(*b), cap(*b))
			}
			if i := bytes.IndexFunc(*b, func(r rune) bool { return r != 0 }); i >= 0 {
				t.Fatalf("round %d: Get(%d) holds %#x at %d, want zeros", round, n, (*b)[i], i)
			}
			if n > 0 {
				(*b)[n-1] = 1 // the whole length is writable
			}
			p.Put(b)
		}
		rand.Shuffle(len(lengths), func(i, j int) { lengths[i], lengths[j] = lengths[j], lengths[i] })
	}
}

// TestGetPutConcurrently: buffers taken and given back by many goroutines at once, at random
// lengths and cut shorter before Put (as gRPC gives back a prefix), always have the length asked
// for, and no buffer is handed to two holders at once.
func TestGetPutConcurrently(t *testing.T) {
	var p Pool
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range 2000 {
				n := r.IntN(2 << 20)
				if r.IntN(2) == 0 {
					n = r.IntN(40 << 10)
				}
				b := p.Get(n)
				if len(*b) != n || cap(*b) < n {
					t.Errorf("Get(%d) = len %d, cap %d", n, len(*b), cap(*b))
					return
				}
				mark := byte(g + 1)
				for i := 0; i < n; i += 512 {
					(*b)[i] = mark
				}
				for i := 0; i < n; i += 512 {
					if (*b)[i] != mark {
						t.Errorf("a buffer of length %d is held by another goroutine too", n)
						return
					}
				}
				*b = (*b)[:r.IntN(n+1)]
				p.Put(b)
			}
		})
	}
	wg.Wait()
}

// TestMessagesThroughGRPC: messages of every size from empty to 3 MiB, of random bytes, go
// through a Pub/Sub emulator and come back whole, with the client reading its frames, and both
// sides' codecs marshalling and assembling messages, in buffers of the poisoned Pool, which
// overwrites every buffer it takes back: a byte read past the length Get handed out would show
// as 0xA5 in a message. (The emulator's server reads its frames through gRPC's own pool: see
// installPool.)
func TestMessagesThroughGRPC(t *testing.T) {
	e := pubsubtest.Start(t)
	topic := e.Topic(t, "t")
	sub := e.Subscription(t, topic, "s", 60*time.Second)
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 100, 255, 256, 4096, 16<<10 - 7, 16 << 10, 40 << 10, 1<<20 - 100, 1 << 20, 3 << 20}
	for range 40 {
		sizes = append(sizes, r.IntN(300<<10))
	}
	want := map[string][]byte{}
	var msgs []*pubsubpb.PubsubMessage
	for i, n := range sizes {
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(r.IntN(0xA5)) // never the poison byte
		}
		key := string(rune('a'+i%26)) + string(rune('a'+i/26))
		want[key] = data
		msgs = append(msgs, &pubsubpb.PubsubMessage{Data: data, Attributes: map[string]string{"k": key}})
	}
	gets := poisoned.gets.Load()
	for round := range 3 { // the pool's buffers are reused, poisoned, by the later rounds
		e.Publish(t, topic, msgs...)
		got := e.PullAll(t, sub)
		if len(got) != len(msgs) {
			t.Fatalf("round %d: %d messages came back, want %d", round, len(got), len(msgs))
		}
		for _, m := range got {
			if w := want[m.Attributes["k"]]; !bytes.Equal(m.Data, w) {
				t.Errorf("round %d: message %q came back with %d bytes (%d of them 0xA5), want %d", round, m.Attributes["k"], len(m.Data), bytes.Count(m.Data, []byte{0xA5}), len(w))
			}
		}
	}
	if poisoned.gets.Load() == gets || poisoned.puts.Load() == 0 {
		t.Errorf("gRPC took %d buffers from the pool and gave back %d: the pool was not gRPC's default", poisoned.gets.Load()-gets, poisoned.puts.Load())
	}
}

// TestLargeBuffersBounded: the buffers above 1 MiB given back are kept up to maxLargeKept bytes
// of capacity, the rest left to the garbage collector, and Get hands out the smallest kept that
// holds the length asked for (a pool that kept every one until a collection peaked at 6.5 to
// 7.3 GB on messages of 1 MiB of random base64, against 4.4 to 4.5).
func TestLargeBuffersBounded(t *testing.T) {
	var p Pool
	for range 2 * maxLargeKept / (3 << 20) {
		b := make([]byte, 3<<20)
		p.Put(&b)
	}
	if p.kept > maxLargeKept || p.kept < maxLargeKept-(3<<20) {
		t.Errorf("kept %d bytes of buffers above 1 MiB, want at most %d and no room for one more", p.kept, maxLargeKept)
	}
	p = Pool{}
	for _, size := range []int{4 << 20, 2 << 20, 3 << 20} {
		b := make([]byte, size)
		p.Put(&b)
	}
	for _, tc := range []struct{ n, cap int }{{3 << 20, 3 << 20}, {1<<20 + 1, 2 << 20}, {1<<20 + 1, 4 << 20}} {
		if b := p.Get(tc.n); cap(*b) != tc.cap {
			t.Errorf("Get(%d) = a buffer of capacity %d, want the smallest kept that holds it, %d", tc.n, cap(*b), tc.cap)
		}
	}
	if p.kept != 0 || len(p.large) != 0 {
		t.Errorf("%d buffers (%d bytes) kept after all were handed out", len(p.large), p.kept)
	}
}
