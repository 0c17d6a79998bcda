package integration_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	pb "google.golang.org/genproto/googleapis/pubsub/v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/chtest"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/flowtest"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/source"
)

func init() {
	register.Function2x1(toPubsubMessage)
	register.Function1x1(keepTimestamp)
}

// toPubsubMessage makes the *pb.PubsubMessage that pubsubio.Read would give for payload, with
// the publish time that the element's timestamp says (as pubsubio.Read stamps it).
func toPubsubMessage(et beam.EventTime, payload []byte) *pb.PubsubMessage {
	return &pb.PubsubMessage{
		MessageId:   fmt.Sprintf("m-%x", payload),
		Data:        payload,
		PublishTime: timestamppb.New(et.ToTime()),
	}
}

// keepTimestamp converts as the Dataflow source did before it restamped elements: each message
// keeps its publish time as its timestamp.
func keepTimestamp(m *pb.PubsubMessage) flow.Messages {
	return flow.Messages{Messages: []flow.Message{{ID: m.GetMessageId(), Data: m.GetData(), PublishTimeMillis: m.GetPublishTime().AsTime().UnixMilli()}}}
}

// TestLateDataFixedWindows feeds the Dataflow graph (everything after pubsubio.Read, which
// prism cannot run) messages whose publish times are an hour behind the watermark, as a seek,
// a dead-letter replay or a backlog after an outage makes them, in fixed-window mode (allowed
// lateness 0): every row lands. The control keeps the publish times as timestamps and shows that
// Beam then drops such late data, which on Dataflow would already be acknowledged. A third case
// has the publish times, and the watermark with them, ahead of the worker's clock, as a worker
// whose clock is behind Pub/Sub's sees them (here by an hour, where a skew of a millisecond
// drops the messages published within it after a window's end): restamped at receipt, they
// were behind the watermark and dropped, and are now kept at their publish time.
func TestLateDataFixedWindows(t *testing.T) {
	const n = 50
	for _, tc := range []struct {
		name    string
		convert func(s beam.Scope, col beam.PCollection) beam.PCollection
		late    bool // whether the rows are expected to be dropped as late
		// The watermark before the messages come, and their publish time, from now.
		watermark, published time.Duration
	}{
		{"restamped at receipt", source.FromPubsub, false, 0, -time.Hour},
		{"control: publish time kept", func(s beam.Scope, col beam.PCollection) beam.PCollection {
			return beam.ParDo(s, keepTimestamp, col)
		}, true, 0, -time.Hour},
		{"publish time ahead of the clock", source.FromPubsub, false, time.Hour, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := chtest.New(t)
			srv.CreateTable(t, "CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id", "events")
			srv.MustExec(t, deadletter.CreateTable(srv.Database, "dead_letters"))
			o := pipeline.Defaults()
			o.InputSubscription = "projects/test-project/subscriptions/events-sub"
			o.ClickHouseURL = srv.URL
			o.ClickHouseDatabase = srv.Database
			o.ClickHouseTable = "events"
			o.ClickHouseUsername = "default"
			o.ClickHouseDeadLetterTable = "dead_letters"
			o.WindowSeconds = pipeline.GivenInt(1)
			o.NumShards = 2

			now := time.Now()
			cfg := teststream.NewConfig()
			if err := cfg.AdvanceWatermark(now.Add(tc.watermark).UnixMilli()); err != nil {
				t.Fatal(err)
			}
			var payloads []any
			for i := range n {
				payloads = append(payloads, []byte(fmt.Sprintf(`{"id":%d}`, i)))
			}
			if err := cfg.AddElementList(now.Add(tc.published).UnixMilli(), payloads); err != nil {
				t.Fatal(err)
			}
			if err := cfg.AdvanceWatermarkToInfinity(); err != nil {
				t.Fatal(err)
			}
			p, s := beam.NewPipelineWithRoot()
			raw := beam.ParDo(s, toPubsubMessage, teststream.Create(s, cfg))
			pipeline.BuildFrom(s, pipeline.MustCheck(o), pipeline.DataflowSource, tc.convert(s, raw))
			if _, err := flowtest.RunWithMetrics(p); err != nil {
				t.Fatalf("pipeline: %v", err)
			}
			rows := strings.TrimSpace(srv.MustQuery(t, "SELECT count() FROM events"))
			dead := strings.TrimSpace(srv.MustQuery(t, "SELECT count() FROM dead_letters"))
			t.Logf("rows %s, dead letters %s of %d messages", rows, dead, n)
			switch {
			case !tc.late && (rows != fmt.Sprint(n) || dead != "0"):
				t.Errorf("%s rows and %s dead letters, want %d rows", rows, dead, n)
			case tc.late && rows == fmt.Sprint(n):
				t.Errorf("the control lost nothing: this test no longer shows late data being dropped")
			}
		})
	}
}
