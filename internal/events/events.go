// Package events generates a realistic stream of web/app analytics events as JSON messages, for
// benchmarks, the demo and the end-to-end tests: ids, ISO-8601 timestamps with zones, nested
// objects, arrays, nulls and booleans, 0.3 to 2 KB each. Malformed returns the kinds of bad
// messages real streams carry.
package events

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"
)

// DDL is the target table for the events on ClickHouse 18.16 and newer; {table} stands for the
// table name. 20 columns: DateTime, Date, arrays, Nullable, nested objects stored as String,
// integers, floats, booleans as UInt8, and a column with a DEFAULT.
const DDL = `CREATE TABLE {table} (
    event_id     String,
    event_type   String,
    user_id      UInt64,
    session_id   String,
    seq          Int64,
    ts           DateTime('UTC'),
    received_at  DateTime('UTC'),
    event_date   Date,
    page         String,
    device       String,
    geo          String,
    tags         Array(String),
    scores       Array(Float64),
    duration_ms  UInt32,
    revenue      Nullable(Float64),
    is_logged_in UInt8,
    items        String,
    experiment   Nullable(String),
    app_version  String,
    source       String DEFAULT 'unknown'
) ENGINE = MergeTree PARTITION BY toYYYYMM(event_date) ORDER BY (event_type, ts, event_id)`

// Event is one generated event, with the values a test expects to read back.
type Event struct {
	EventID    string
	EventType  string
	UserID     uint64
	Seq        int64
	TS         time.Time // the instant, whatever zone the JSON wrote it in
	DurationMS uint32
	Revenue    *float64
	LoggedIn   bool
	Source     string // "" when the field is absent (the DEFAULT applies)
}

var (
	types     = []string{"page_view", "click", "scroll", "add_to_cart", "purchase", "sign_in", "search", "video_play"}
	oses      = []string{"iOS", "Android", "Windows", "macOS", "Linux"}
	countries = []string{"DE", "US", "FR", "JP", "BR", "IN", "GB", "PL", "ES", "NG"}
	cities    = []string{"Berlin", "München", "São Paulo", "Tōkyō", "Paris", "Łódź", "New York", "Lagos"}
	zones     = []*time.Location{time.UTC, time.FixedZone("", 3600), time.FixedZone("", -5*3600), time.FixedZone("", 9*3600), time.FixedZone("", 5*3600+1800)}
	words     = strings.Fields("alpha beta gamma delta sale new promo spring summer winter blue red green shoes hat coat bag lamp chair desk")
)

// Generator makes events from a seeded random source, so runs are reproducible.
type Generator struct {
	rng  *rand.Rand
	seq  int64
	base time.Time
}

// NewGenerator returns a generator whose events start at base.
func NewGenerator(seed uint64, base time.Time) *Generator {
	return &Generator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), base: base.UTC().Truncate(time.Second)}
}

func (g *Generator) pick(s []string) string { return s[g.rng.IntN(len(s))] }

// Next returns the next good event and its JSON message.
func (g *Generator) Next() (Event, []byte) {
	g.seq++
	r := g.rng
	ev := Event{
		EventID:    fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Uint64()&(1<<48-1)),
		EventType:  g.pick(types),
		UserID:     r.Uint64N(1 << 62),
		Seq:        g.seq,
		TS:         g.base.Add(time.Duration(g.seq) * 10 * time.Millisecond).Truncate(time.Second),
		DurationMS: uint32(r.IntN(120000)),
		LoggedIn:   r.IntN(3) > 0,
	}
	if ev.EventType == "purchase" || r.IntN(10) == 0 {
		v := float64(r.IntN(100000)) / 100
		ev.Revenue = &v
	}
	if r.IntN(4) > 0 {
		ev.Source = g.pick([]string{"web", "ios", "android"})
	}
	zone := zones[r.IntN(len(zones))]
	m := map[string]any{}
	order := []string{}
	set := func(k string, v any) { m[k] = v; order = append(order, k) }
	set("event_id", ev.EventID)
	set("event_type", ev.EventType)
	if r.IntN(5) == 0 {
		set("user_id", fmt.Sprint(ev.UserID)) // some producers send ids as strings
	} else {
		set("user_id", ev.UserID)
	}
	set("session_id", fmt.Sprintf("s-%x", r.Uint64()))
	set("seq", ev.Seq)
	ts := ev.TS.In(zone).Format("2006-01-02T15:04:05") + fmt.Sprintf(".%03d", r.IntN(1000)) + ev.TS.In(zone).Format("Z07:00")
	set("ts", ts)
	set("received_at", ev.TS.Add(time.Duration(r.IntN(5000))*time.Millisecond).Format(time.RFC3339Nano))
	set("event_date", ev.TS.Format(time.DateOnly))
	set("page", map[string]any{
		"url":      "https://shop.example.com/" + g.pick(words) + "/" + g.pick(words) + fmt.Sprintf("?id=%d", r.IntN(1e6)),
		"referrer": []any{nil, "https://www.google.com/", "https://news.example.org/a/" + g.pick(words)}[r.IntN(3)],
		"title":    strings.ToUpper(g.pick(words)) + " " + g.pick(words) + " – Shop",
	})
	set("device", map[string]any{"os": g.pick(oses), "model": fmt.Sprintf("M-%d", r.IntN(500)), "screen": []int{360 + r.IntN(1600), 640 + r.IntN(1600)}, "dark_mode": r.IntN(2) == 0})
	set("geo", map[string]any{"country": g.pick(countries), "city": g.pick(cities), "lat": float64(r.IntN(180000))/1000 - 90, "lon": float64(r.IntN(360000))/1000 - 180})
	tags := []string{}
	for range r.IntN(5) {
		tags = append(tags, g.pick(words))
	}
	set("tags", tags)
	scores := []float64{}
	for range r.IntN(4) {
		scores = append(scores, float64(r.IntN(10000))/100)
	}
	set("scores", scores)
	set("duration_ms", ev.DurationMS)
	set("revenue", ev.Revenue)
	set("is_logged_in", ev.LoggedIn)
	items := []any{}
	for range r.IntN(12) {
		items = append(items, map[string]any{"sku": fmt.Sprintf("SKU-%06d", r.IntN(1e6)), "name": g.pick(words) + " " + g.pick(words), "qty": 1 + r.IntN(3), "price": float64(r.IntN(50000)) / 100, "discount": nil})
	}
	set("items", items)
	if r.IntN(3) == 0 {
		set("experiment", "exp-"+g.pick(words))
	} else {
		set("experiment", nil)
	}
	set("app_version", fmt.Sprintf("%d.%d.%d", 1+r.IntN(3), r.IntN(20), r.IntN(100)))
	if ev.Source != "" {
		set("source", ev.Source)
	}
	if r.IntN(10) == 0 {
		set("debug", map[string]any{"trace": strings.Repeat("x", r.IntN(300))}) // a field without a column
	}
	return ev, encodeOrdered(m, order)
}

// encodeOrdered writes m's keys in order (json.Marshal would sort them).
func encodeOrdered(m map[string]any, order []string) []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(m[k])
		if err != nil {
			panic(err)
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// Malformed returns a bad message of one of several kinds (named by the returned kind), built from
// a good event: not JSON, wrong types, out-of-range values, missing required fields.
func (g *Generator) Malformed() (kind string, msg []byte) {
	_, good := g.Next()
	s := string(good)
	switch g.rng.IntN(6) {
	case 0:
		// Cut at a character's start, so that the half is still UTF-8 and only its JSON is bad.
		cut := len(s) / 2
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return "invalid JSON", []byte(s[:cut])
	case 1:
		return "user_id out of range", []byte(replaceField(s, "user_id", "-1"))
	case 2:
		return "ts not ISO-8601", []byte(replaceField(s, "ts", `"30/11/2026 10:00"`))
	case 3:
		return "duration_ms not a number", []byte(replaceField(s, "duration_ms", `"fast"`))
	case 4:
		return "event_id missing", []byte(strings.Replace(s, `"event_id":`, `"eventId":`, 1))
	default:
		return "not an object", []byte(`[` + s + `]`)
	}
}

// replaceField replaces the value of a top-level scalar field.
func replaceField(s, field, value string) string {
	key := `"` + field + `":`
	i := strings.Index(s, key)
	if i < 0 {
		return s
	}
	j := i + len(key)
	end := j
	if s[j] == '"' {
		end = j + 1 + strings.IndexByte(s[j+1:], '"') + 1
	} else {
		for end < len(s) && s[end] != ',' && s[end] != '}' {
			end++
		}
	}
	return s[:j] + value + s[end:]
}
