// Command dataflowshape measures the pipeline's SDK-side CPU per message in the shape Dataflow
// gives it: one element per message, a serialized PubsubMessage handed over by the runner, which
// the SDK decodes (pubsubio.Unmarshal, as source.ReadDataflow does) and converts
// (source.FromPubsub) before the parse stage. The local runner's own source emits one element per
// Pull response instead, so the demo (make bench-sdk) measures another shape.
//
// Dataflow's Pub/Sub read runs in the service, which no machine here has, so the runner's side
// is played by this process: the demo's events (internal/events, 2% malformed, attribute
// source=demo, a message id and a publish time) are made and serialized as PubsubMessages before
// the pipeline runs, and an Impulse and a DoFn emit them, then a Reshuffle, after which each
// message reaches the SDK from the runner as its own element, as on Dataflow. What follows the
// Reshuffle is what a Dataflow worker's SDK process runs: with -until=all the decoding,
// source.FromPubsub and every stage of pipeline.BuildFrom (parse, batch, write, dead letters to a
// table and a topic); with -until=raw nothing but a DoFn that drops the serialized messages. The
// difference of the two, in the same round, is the CPU of the stages after the handover; emitting
// the messages and the handover itself (sending them to the runner and receiving them back) are
// in both. prism puts many messages in a bundle; how many Dataflow puts depends on the job's
// throughput, which nothing here can measure.
//
// Run it against prism as its own process, so that this process holds the SDK side alone:
//
//	go build -o bin/prism github.com/apache/beam/sdks/v2/go/cmd/prism && bin/prism -job_port 8073 &
//	go run ./integration_test/dataflowshape -until=all --runner=universal --endpoint=localhost:8073 --environment_type=LOOPBACK
//
// (scripts/dataflow-shape.sh runs the rounds; make bench-dataflow-shape). It needs ClickHouse on
// 127.0.0.1:9000 (make clickhouse) and uses a Pub/Sub emulator of its own, in this process, for the
// dead-letter topic and the acknowledging stage. It checks that every message became a row or a
// dead letter, and prints the process's CPU per 100,000 messages.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	pb "google.golang.org/genproto/googleapis/pubsub/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline/runtimeconfig"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/pubsubio"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/source"
)

var (
	messages   = flag.Int("messages", 100_000, "messages to generate")
	badPercent = flag.Float64("bad-percent", 2, "share of malformed messages, in percent")
	addr       = flag.String("clickhouse", "127.0.0.1:9000", "ClickHouse native-protocol address")
	database   = flag.String("database", "pubsub_to_clickhouse_dataflowshape", "ClickHouse database, dropped and created again at each run")
	until      = flag.String("until", "all", "all: the whole pipeline after the handover; raw: drop the serialized messages after the handover")
	rows       = flag.Int("batch-row-count", 5000, "batchRowCount")
	window     = flag.Int("window-seconds", 5, "windowSeconds; 0: unset (the count mode)")
	cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the pipeline's run to this file")
	shuffle    = flag.String("shuffle-compression", "", "shuffleCompression: minlz (the default), s2 or zstd")
)

const project = "shape-project"

func init() {
	runtimeconfig.Apply() // the binary's garbage collector and gRPC buffers, as a worker runs them
	register.DoFn2x0[[]byte, func([]byte)](&generateFn{})
	register.Emitter1[[]byte]()
	register.DoFn1x0[[]byte](&dropFn{})
}

func main() {
	flag.Parse()
	beam.Init()
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx := context.Background()
	if *until != "all" && *until != "raw" {
		return fmt.Errorf("-until=%q: want all or raw", *until)
	}

	// The emulator, for the dead-letter topic and the acknowledging stage (which has nothing to
	// acknowledge: on Dataflow the service acknowledges, and these messages carry no ack id).
	emulator, err := pubsubtest.StartLocal(ctx)
	if err != nil {
		return err
	}
	defer emulator.Close()
	os.Setenv("PUBSUB_EMULATOR_HOST", emulator.Addr)
	topic, dlqTopic := "projects/"+project+"/topics/events", "projects/"+project+"/topics/events-dead-letter"
	sub := "projects/" + project + "/subscriptions/events"
	if err := emulator.Create(ctx, sub, topic, dlqTopic); err != nil {
		return err
	}

	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{*addr}, Auth: clickhouse.Auth{Username: "default"}})
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, q := range []string{
		"DROP DATABASE IF EXISTS " + *database,
		"CREATE DATABASE " + *database,
		strings.ReplaceAll(events.DDL, "{table}", *database+".events"),
		deadletter.CreateTable(*database, "events_dead_letter"),
	} {
		if err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}

	p, s := beam.NewPipelineWithRoot()
	serialized = serialize(*messages, *badPercent)
	raw := beam.ParDo(s, &generateFn{}, beam.Impulse(s))
	handed := beam.Reshuffle(s, raw)
	if *until == "raw" {
		beam.ParDo0(s, &dropFn{}, handed)
	} else {
		o := pipeline.Defaults()
		o.InputSubscription = sub
		o.ClickHouseURL = "clickhouse://" + *addr
		o.ClickHouseDatabase = *database
		o.ClickHouseTable = "events"
		o.ClickHouseUsername = "default"
		o.ClickHouseDeadLetterTable = "events_dead_letter"
		o.DeadLetterTopic = dlqTopic
		o.BatchRowCount = pipeline.GivenInt(*rows)
		if *window > 0 {
			o.WindowSeconds = pipeline.GivenInt(*window)
		}
		o.ShuffleCompression = *shuffle
		// LocalSource: prism fires no processing-time timers of a stateful DoFn, which the
		// Dataflow source's batcher would set; the batches are the same. BuildFrom also turns
		// off prism's splits of running bundles, which would lose the batcher's state.
		pipeline.BuildFrom(s, pipeline.MustCheck(o), pipeline.LocalSource, source.FromPubsub(s, pubsubio.Unmarshal(s, handed)))
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	before, start := cpu(), time.Now()
	res, err := beamx.RunWithMetrics(ctx, p)
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	used, elapsed := cpu()-before, time.Since(start)

	if *until == "all" {
		var stored, dead uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM "+*database+".events").Scan(&stored); err != nil {
			return err
		}
		if err := conn.QueryRow(ctx, "SELECT count() FROM "+*database+".events_dead_letter").Scan(&dead); err != nil {
			return err
		}
		if int(stored+dead) != *messages {
			var counters []string
			if res != nil {
				for _, c := range res.Metrics().AllMetrics().Counters() {
					counters = append(counters, fmt.Sprintf("%s/%s=%d", c.Key.Step, c.Key.Name, c.Result()))
				}
			}
			return fmt.Errorf("%d rows and %d dead letters of %d messages; counters: %s", stored, dead, *messages, strings.Join(counters, " "))
		}
		fmt.Printf("rows %d, dead letters %d of %d messages\n", stored, dead, *messages)
	}
	fmt.Printf("until=%s: %.2f CPU-seconds per 100,000 messages (%.2f s for %d messages, %.1f s elapsed)\n",
		*until, used.Seconds()*100_000/float64(*messages), used.Seconds(), *messages, elapsed.Seconds())
	return nil
}

// cpu returns the user and system CPU time of this process so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serialized are the messages generateFn emits, made before the pipeline runs (serialize), so
// that making them is not in the CPU measured. The DoFns run in this process (LOOPBACK), which
// is what lets generateFn read them.
var serialized [][]byte

// serialize makes n demo events, each a serialized PubsubMessage as pubsubio.Read's external
// transform outputs it (with attributes), a share of badPercent malformed.
func serialize(n int, badPercent float64) [][]byte {
	base := time.Now()
	gen := events.NewGenerator(1, base)
	every := 0
	if badPercent > 0 {
		every = int(100 / badPercent)
	}
	out := make([][]byte, n)
	for i := range out {
		var data []byte
		if every > 0 && i%every == every/2 {
			_, data = gen.Malformed()
		} else {
			_, data = gen.Next()
		}
		b, err := proto.Marshal(&pb.PubsubMessage{
			Data:        data,
			Attributes:  map[string]string{"source": "demo"},
			MessageId:   strconv.Itoa(1_000_000_000 + i),
			PublishTime: timestamppb.New(base.Add(time.Duration(i) * time.Microsecond)),
		})
		if err != nil {
			panic(err)
		}
		out[i] = b
	}
	return out
}

// generateFn plays Dataflow's Pub/Sub read: it emits the serialized messages.
type generateFn struct{}

func (generateFn) ProcessElement(_ []byte, emit func([]byte)) {
	if len(serialized) == 0 {
		panic("dataflowshape: no messages to emit: the SDK harness must run in this process (--environment_type=LOOPBACK)")
	}
	for _, b := range serialized {
		emit(b)
	}
}

// dropFn takes the serialized messages and does nothing with them.
type dropFn struct{}

func (dropFn) ProcessElement([]byte) {}
