package udf

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// benchUDFs are the functions of BenchmarkUDF: the call alone, and a small function in the
// manner of Google's sample transform.js (parse, normalise a field, remove one, stringify), with
// and without the second argument.
var benchUDFs = []struct{ name, src string }{
	{"identity", `function f(payload) { return payload; }`},
	{"transform", `function f(payload) {
  var e = JSON.parse(payload);
  e.source = (e.source || "unknown").toLowerCase();
  delete e.experiment;
  return JSON.stringify(e);
}`},
	{"transform+message", `function f(payload, message) {
  var e = JSON.parse(payload);
  e.source = message.attributes.source || (e.source || "unknown").toLowerCase();
  delete e.experiment;
  return JSON.stringify(e);
}`},
}

// BenchmarkUDF measures the UDF stage's per-message work (the call under its time bound in the
// function's process, the frames both ways, the metrics) on the realistic event mix of
// internal/events: 0.3 to 2 KB, in elements of 1 message and of 500 (what the local source's
// Pulls give under load). Compare with transforms/parse's BenchmarkParseEvents, the parse
// stage's work on the same messages. MB/s is payload bytes; ns/op (wall time) and allocs/op
// are per message; stage-cpu-ns/op and helper-cpu-ns/op are the CPU time (user and system) per
// message of this process and of the function's process, which is what a worker pays.
func BenchmarkUDF(b *testing.B) {
	gen := events.NewGenerator(1, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	msgs := make([]flow.Message, 4096)
	total := 0
	for i := range msgs {
		_, data := gen.Next()
		// Not a message with an integer JSON.parse would round (some events' ids are beyond
		// 2^53): the functions below would carry it, and the message would be a dead letter.
		for roundingOf(string(data)) != nil {
			_, data = gen.Next()
		}
		msgs[i] = flow.Message{ID: "id", Data: data, Attributes: map[string]string{"origin": "bench"}, PublishTimeMillis: 1}
		total += len(data)
	}
	ctx := metrics.SetBundleID(metrics.SetPTransformID(context.Background(), "udf"), "bundle")
	for _, u := range benchUDFs {
		for _, per := range []int{1, 500} {
			b.Run(fmt.Sprintf("%s/element=%d", u.name, per), func(b *testing.B) {
				f := &udfFn{Config: Config{Path: writeUDF(b, u.src), Function: "f"}}
				if err := f.Setup(context.Background()); err != nil {
					b.Fatal(err)
				}
				var out, failed int
				emit := func(ms flow.Messages) { out += len(ms.Messages) }
				emitDL := func(flow.DeadLetter) { failed++ }
				emitDropped := func([]string) {}
				b.SetBytes(int64(total / len(msgs)))
				b.ReportAllocs()
				self, children := cpu(syscall.RUSAGE_SELF), cpu(syscall.RUSAGE_CHILDREN)
				b.ResetTimer()
				for i := 0; i < b.N; i += per {
					from := i % len(msgs)
					n := min(per, b.N-i, len(msgs)-from)
					if err := f.ProcessElement(ctx, flow.Messages{Messages: msgs[from : from+n]}, emit, emitDL, emitDropped); err != nil {
						b.Fatal(err)
					}
					i -= per - n
				}
				b.StopTimer()
				f.Teardown() // the helper's CPU time is counted once it has been waited for
				b.ReportMetric(float64(cpu(syscall.RUSAGE_SELF)-self)/float64(b.N), "stage-cpu-ns/op")
				b.ReportMetric(float64(cpu(syscall.RUSAGE_CHILDREN)-children)/float64(b.N), "helper-cpu-ns/op")
				if failed != 0 || out != b.N {
					b.Fatalf("%d of %d messages out, %d failed", out, b.N, failed)
				}
			})
		}
	}
}

// cpu returns the user and system CPU time of who (syscall.RUSAGE_SELF or RUSAGE_CHILDREN), in
// nanoseconds.
func cpu(who int) int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(who, &u); err != nil {
		panic(err)
	}
	return u.Utime.Nano() + u.Stime.Nano()
}
