package integration_test

import (
	"testing"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// TestCompressionOnTheWire runs the same demo events through a proxy in front of the server with
// each clickHouseCompression: every run stores the same rows, and lz4 and zstd send far fewer
// bytes than none. The bytes are counted by the proxy, so they are what the network carries.
func TestCompressionOnTheWire(t *testing.T) {
	const n = 3000
	uploaded := map[string]int64{}
	var stored string
	for _, method := range []string{"none", "lz4", "zstd"} {
		t.Run(method, func(t *testing.T) {
			e := newE2E(t, events.DDL)
			proxy := e.srv.Proxy(t)
			e.opts.ClickHouseURL = proxy.URL()
			e.opts.ClickHouseCompression = method
			e.opts.BatchRowCount = pipeline.GivenInt(1000)
			e.opts.WindowSeconds = pipeline.GivenInt(1)
			gen := events.NewGenerator(11, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			e.publishEvents(t, gen, n)
			e.run(t)
			got := e.srv.MustQuery(t, "SELECT count(), sum(cityHash64(event_id, user_id, event_type, ts, page, items, geo)) FROM events")
			if stored == "" {
				stored = got
			} else if got != stored {
				t.Errorf("rows stored = %s, want %s as without compression", got, stored)
			}
			uploaded[method] = proxy.Uploaded()
		})
	}
	none := uploaded["none"]
	for _, method := range []string{"lz4", "zstd"} {
		ratio := float64(uploaded[method]) / float64(none)
		t.Logf("%s: %d bytes to the server, %.3f of none's %d", method, uploaded[method], ratio, none)
		if ratio > 0.6 {
			t.Errorf("%s sent %d bytes, %.2f of the %d sent without compression; want at most 0.6", method, uploaded[method], ratio, none)
		}
	}
}
