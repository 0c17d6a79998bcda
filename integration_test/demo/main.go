// Command demo runs the main job on realistic data, on this machine only: a Pub/Sub emulator
// (pstest, in this process), the ClickHouse server on loopback, and the pipeline's own binary on
// the local runner. It creates the topic, subscription, target table and dead-letter table,
// publishes a stream of web/app events (about 2% malformed, of several kinds) while the pipeline
// runs, prints progress, and when the pipeline has stopped by itself (stopAfterIdle) prints a
// summary: messages published, rows in the table, dead letters by kind, the pipeline's metrics,
// elapsed time, messages per second and the pipeline process's CPU time.
//
//	go run ./integration_test/demo -binary bin/pubsub-to-clickhouse [-messages 100000]
//
// `make demo` builds the binary, starts ClickHouse and runs this; `make bench-e2e` runs it with
// 200,000 messages (2% malformed, as in the demo).
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/events"
	"github.com/ch-beam/pubsub-to-clickhouse/internal/pubsubtest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

var (
	binary     = flag.String("binary", "bin/pubsub-to-clickhouse", "the pipeline's binary (CGO_ENABLED=0 go build -o bin/pubsub-to-clickhouse ./flex-template)")
	messages   = flag.Int("messages", 100_000, "messages to publish")
	badPercent = flag.Float64("bad-percent", 2, "share of malformed messages, in percent")
	chNative   = flag.String("clickhouse", "clickhouse://127.0.0.1:9000", "ClickHouse native-protocol URL for the pipeline")
	chHTTP     = flag.String("clickhouse-http", "http://127.0.0.1:8123", "ClickHouse HTTP interface, for the demo's own queries")
	database   = flag.String("database", defaultDatabase, "ClickHouse database of the demo, dropped and created again at each run (refused when it holds other tables)")
	wave       = flag.Int("wave", 5000, "messages per publish wave; fewer than 4 waves are kept unwritten (pstest rescans its backlog every 10 ms)")
	extra      = flag.String("pipeline-flags", "--batchRowCount=5000 --windowSeconds=5", "extra flags for the pipeline")
	corpus     = flag.String("corpus", "", "a JSON-lines file to publish, one message a line, instead of generated events (-messages and -bad-percent are then ignored)")
	maxRSS     = flag.Int("max-rss-mib", 0, "fail when the pipeline process's peak memory (max RSS) is above this many MiB; 0: no bound")
	ddl        = flag.String("ddl", "", "with -corpus: the file of the target table's CREATE TABLE statement, the table written {table} (lines starting with -- are comments)")
)

const project = "demo-project"

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	start := time.Now()

	// The emulator, in this process, taking requests of up to 12 MiB as the tests' does (Pub/Sub
	// takes messages of 10 MB; pstest's own address takes 4 MiB).
	emulator, err := pubsubtest.StartLocal(ctx)
	if err != nil {
		return err
	}
	defer emulator.Close()
	addr, pub := emulator.Addr, emulator.Topics
	topic := "projects/" + project + "/topics/events"
	dlqTopic := "projects/" + project + "/topics/events-dead-letter"
	sub := "projects/" + project + "/subscriptions/events"
	if err := emulator.Create(ctx, sub, topic, dlqTopic); err != nil {
		return err
	}
	fmt.Printf("emulator: PUBSUB_EMULATOR_HOST=%s, topic %s, subscription %s, dead-letter topic %s\n", addr, topic, sub, dlqTopic)

	// The messages: a corpus file's lines, or generated events.
	tableDDL := events.DDL
	var lines [][]byte
	if *corpus != "" {
		if *ddl == "" {
			return fmt.Errorf("-corpus needs -ddl, the target table's CREATE TABLE statement")
		}
		b, err := os.ReadFile(*ddl)
		if err != nil {
			return err
		}
		tableDDL = withoutComments(string(b))
		data, err := os.ReadFile(*corpus)
		if err != nil {
			return err
		}
		for line := range bytes.Lines(data) {
			if line = bytes.TrimRight(line, "\r\n"); len(line) > 0 {
				lines = append(lines, line)
			}
		}
		*messages, *badPercent = len(lines), 0
	}

	// The tables.
	unlock, err := lockDatabase(*database)
	if err != nil {
		return err
	}
	defer unlock()
	if err := demoOwns(*database); err != nil {
		return err
	}
	fmt.Printf("clickhouse: (re)creating the database %s, dropping it first if it exists\n", *database)
	for _, q := range []string{
		"DROP DATABASE IF EXISTS " + *database,
		"CREATE DATABASE " + *database,
		"CREATE TABLE " + *database + "." + demoMarker + " (made_at DateTime DEFAULT now()) ENGINE = TinyLog",
		strings.ReplaceAll(tableDDL, "{table}", *database+".events"),
		deadletter.CreateTable(*database, "events_dead_letter"),
	} {
		if _, err := query(q); err != nil {
			return err
		}
	}
	fmt.Printf("clickhouse: tables %s.events and %s.events_dead_letter created\n", *database, *database)

	// The pipeline, on the local runner, until it is idle.
	args := []string{
		"--runner=prism",
		"--inputSubscription=" + sub,
		"--clickHouseUrl=" + *chNative,
		"--clickHouseDatabase=" + *database,
		"--clickHouseTable=events",
		"--clickHouseUsername=default",
		"--clickHousePassword=",
		"--clickHouseDeadLetterTable=events_dead_letter",
		"--deadLetterTopic=" + dlqTopic,
		"--stopAfterIdle=5",
	}
	args = lastWins(append(args, strings.Fields(*extra)...))
	cmd := exec.Command(*binary, args...)
	cmd.Env = append(os.Environ(), "PUBSUB_EMULATOR_HOST="+addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	fmt.Printf("pipeline: %s %s\n", *binary, strings.Join(args, " "))
	pipelineStart := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	metricsLine := make(chan string, 1)
	go scanPipelineOutput(out, metricsLine)

	// Publish in waves while it runs, keeping the emulator's backlog bounded.
	gen := events.NewGenerator(uint64(time.Now().UnixNano()), time.Now())
	var published, bad atomic.Int64
	badKinds := map[string]int{}
	publishDone := make(chan error, 1)
	go func() {
		every := 0
		if *badPercent > 0 {
			every = int(100 / *badPercent)
		}
		for n := 0; n < *messages; {
			for published.Load()-count("events")-count("events_dead_letter") > int64(4**wave) {
				time.Sleep(50 * time.Millisecond)
			}
			var batch []*pubsubpb.PubsubMessage
			for ; n < *messages && len(batch) < *wave; n++ {
				var data []byte
				if lines != nil {
					data = lines[n]
				} else if every > 0 && n%every == every/2 {
					kind, d := gen.Malformed()
					badKinds[kind]++
					bad.Add(1)
					data = d
				} else {
					_, data = gen.Next()
				}
				batch = append(batch, &pubsubpb.PubsubMessage{Data: data, Attributes: map[string]string{"source": "demo"}})
			}
			// Requests of at most 1,000 messages and about 8 MB (Pub/Sub's limits are 1,000 and
			// 10 MB), a larger message alone.
			for i := 0; i < len(batch); {
				end, size := i, 0
				for end < len(batch) && end-i < 1000 && (end == i || size+len(batch[end].Data) <= 8_000_000) {
					size += len(batch[end].Data)
					end++
				}
				if _, err := pub.Publish(ctx, &pubsubpb.PublishRequest{Topic: topic, Messages: batch[i:end]}); err != nil {
					publishDone <- err
					return
				}
				i = end
			}
			published.Add(int64(len(batch)))
		}
		publishDone <- nil
	}()

	// Progress until the pipeline exits.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	var runErr error
loop:
	for {
		select {
		case err := <-publishDone:
			if err != nil {
				cmd.Process.Kill()
				return fmt.Errorf("publishing: %w", err)
			}
			publishDone = nil
			fmt.Printf("[%5.1fs] published all %d messages\n", time.Since(start).Seconds(), published.Load())
		case <-tick.C:
			rows, dls := count("events"), count("events_dead_letter")
			fmt.Printf("[%5.1fs] published %d, rows %d, dead letters %d, %.0f msg/s\n", time.Since(start).Seconds(),
				published.Load(), rows, dls, float64(rows+dls)/time.Since(pipelineStart).Seconds())
		case runErr = <-exited:
			break loop
		}
	}
	elapsed := time.Since(pipelineStart)
	if runErr != nil {
		return fmt.Errorf("the pipeline failed: %w", runErr)
	}
	if publishDone != nil {
		select {
		case err := <-publishDone: // publishing ended as the pipeline did
			if err != nil {
				return fmt.Errorf("publishing: %w", err)
			}
			publishDone = nil
		default:
		}
	}
	if publishDone != nil {
		return fmt.Errorf("the pipeline ended before every message was published (%d of %d): it stopped idle while a wave was on its way; give it a longer --stopAfterIdle in -pipeline-flags, or a smaller -wave",
			published.Load(), *messages)
	}

	// Summary.
	rows, dls := count("events"), count("events_dead_letter")
	dlqOnTopic := len(emulator.Server.Messages()) - int(published.Load())
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	fmt.Println()
	fmt.Println("==================== summary ====================")
	fmt.Printf("messages published:        %d (%d malformed on purpose)\n", published.Load(), bad.Load())
	fmt.Printf("rows in %s.events:       %d\n", *database, rows)
	fmt.Printf("dead letters (table):      %d\n", dls)
	fmt.Printf("dead letters (topic):      %d\n", dlqOnTopic)
	fmt.Printf("accounted for:             %d of %d\n", rows+dls, published.Load())
	if len(badKinds) > 0 {
		fmt.Println("malformed messages published, by kind:")
		printCounts(badKinds)
		fmt.Println("dead letters by error kind (from error_message):")
		printCounts(deadLetterKinds())
	}
	select {
	case m := <-metricsLine:
		fmt.Println("pipeline metrics:")
		for _, kv := range strings.Fields(strings.TrimPrefix(m, "metrics: ")) {
			fmt.Println("  " + kv)
		}
	default:
		fmt.Println("pipeline metrics: (the pipeline printed none)")
	}
	idle := idleWait(args)
	busy := elapsed - idle
	fmt.Printf("elapsed: %v from the pipeline's start to its exit, of which %v idle wait (stopAfterIdle)\n", elapsed.Round(time.Millisecond), idle)
	fmt.Printf("throughput: %.0f messages/s (%.0f messages/s without the idle wait)\n",
		float64(published.Load())/elapsed.Seconds(), float64(published.Load())/busy.Seconds())
	fmt.Printf("pipeline process CPU: %.2f s (user %.2f s, system %.2f s), %.2f CPU-seconds per 100,000 messages\n",
		cpu.Seconds(), cmd.ProcessState.UserTime().Seconds(), cmd.ProcessState.SystemTime().Seconds(), cpu.Seconds()*100_000/float64(published.Load()))
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peak := ru.Maxrss >> 10 // Linux gives KiB
		fmt.Printf("pipeline process peak memory (max RSS): %d MiB\n", peak)
		if *maxRSS > 0 && peak > int64(*maxRSS) {
			return fmt.Errorf("the pipeline process peaked at %d MiB, above -max-rss-mib %d", peak, *maxRSS)
		}
	}
	if rows+dls != published.Load() {
		return fmt.Errorf("%d messages published but %d rows and %d dead letters", published.Load(), rows, dls)
	}
	return nil
}

// scanPipelineOutput passes the pipeline's output through, indented, keeping its log lines
// short, and hands over its final metrics line.
func scanPipelineOutput(r io.Reader, metricsLine chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "metrics: ") {
			metricsLine <- line
			continue
		}
		if strings.Contains(line, "level=DEBUG") {
			continue
		}
		fmt.Println("  | " + text.Cut(line, 320))
	}
}

// demoOwns refuses a database the demo would drop with more than its own tables in it: the
// server's own (default, system), and any that holds a table the demo did not make. A database
// is the demo's when it has no table, is the demo's default one, or holds the marker table the
// demo makes in it (demoMarker): a database of someone else's with a table named events is not.
func demoOwns(database string) error {
	if database == "default" || database == "system" {
		return fmt.Errorf("the demo drops and creates its database, and %s is the server's own: give the demo one of its own, DATABASE=pubsub_to_clickhouse_demo make demo (or -database)", database)
	}
	out, err := query("SELECT name FROM system.tables WHERE database = '" + strings.ReplaceAll(database, "'", "\\'") + "' ORDER BY name FORMAT TSVRaw")
	if err != nil {
		return err
	}
	tables := strings.Fields(out)
	mine := database == defaultDatabase || slices.Contains(tables, demoMarker)
	var others []string // the tables the demo did not make: all of them in a database not its own
	for _, t := range tables {
		if !mine || t != "events" && t != "events_dead_letter" && t != demoMarker {
			others = append(others, t)
		}
	}
	if len(others) == 0 {
		return nil
	}
	return fmt.Errorf("the database %s holds tables the demo did not make (%s), and the demo drops and creates its database: "+
		"give the demo one of its own, DATABASE=%s_demo make demo (or -database)", database, strings.Join(others, ", "), database)
}

// demoMarker is the empty table the demo makes in its database, by which a later run knows the
// database for its own (demoOwns).
const demoMarker = "_made_by_the_pubsub_to_clickhouse_demo"

// defaultDatabase is the demo's database unless -database gives another.
const defaultDatabase = "pubsub_to_clickhouse_demo"

// lockDatabase takes this machine's lock of the demo's database, a file in the temporary
// directory held with flock until unlock (or the process's end), so that a second demo on the
// same database, which would drop the first one's tables under it, stops at once instead.
func lockDatabase(database string) (unlock func(), err error) {
	path := filepath.Join(os.TempDir(), "pubsub-to-clickhouse-demo-"+database+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("the lock of the database %s: %w", database, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		return nil, fmt.Errorf("another demo (%s) runs on the database %s, whose tables this one would drop: wait for it to end, "+
			"or give this one a database of its own, DATABASE=%s_2 make demo (or -database)", strings.TrimSpace(string(holder)), database, database)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "pid %d, since %s\n", os.Getpid(), time.Now().Format(time.TimeOnly))
	return func() { f.Close() }, nil
}

// withoutComments drops the lines of a DDL file that start with "--".
func withoutComments(ddl string) string {
	var keep []string
	for _, l := range strings.Split(ddl, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func query(q string) (string, error) {
	resp, err := http.Post(*chHTTP+"/?"+url.Values{"query": {q}}.Encode(), "text/plain", nil)
	if err != nil {
		return "", fmt.Errorf("ClickHouse does not answer at %s (start it with scripts/clickhouse.sh start): %w", *chHTTP, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("clickhouse: %s: %s", q, strings.TrimSpace(string(body)))
	}
	return strings.TrimSpace(string(body)), nil
}

func count(table string) int64 {
	out, err := query("SELECT count() FROM " + *database + "." + table)
	if err != nil {
		return -1
	}
	n, _ := strconv.ParseInt(out, 10, 64)
	return n
}

var columnRule = regexp.MustCompile(`^column "([^"]+)" \(.+?\): (?:element \[\d+\]: )?.*?((?:is|has|the field is) (?:out of range|not a number|not a whole number|not an ISO-8601 date-time|not an ISO-8601 date|not allowed|missing|a string|a number|an object|an array|a boolean|a time of day)[^;(]*)`)

// deadLetterKinds groups the dead-letter table's errors by column and rule, or by payload rule.
func deadLetterKinds() map[string]int {
	out, err := query("SELECT error_message FROM " + *database + ".events_dead_letter FORMAT TSVRaw")
	kinds := map[string]int{}
	if err != nil {
		kinds["(query failed: "+err.Error()+")"]++
		return kinds
	}
	for _, msg := range strings.Split(out, "\n") {
		if msg == "" {
			continue
		}
		first, _, _ := strings.Cut(msg, "; ")
		switch {
		case strings.HasPrefix(first, "payload: invalid JSON"):
			kinds["payload: invalid JSON"]++
		case strings.HasPrefix(first, "payload: "):
			kind := strings.TrimPrefix(first, "payload: ")
			if i := strings.Index(kind, " is not a JSON object"); i >= 0 {
				kind = "not a JSON object"
			}
			if i := strings.Index(kind, " (first bad byte at offset "); i >= 0 {
				kind = kind[:i] // one kind, whatever the offset
			}
			kinds["payload: "+kind]++
		default:
			if m := columnRule.FindStringSubmatch(first); m != nil {
				kinds[fmt.Sprintf("column %q: %s", m[1], strings.TrimSpace(m[2]))]++
			} else {
				kinds[first]++
			}
		}
	}
	return kinds
}

func printCounts(m map[string]int) {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	for _, k := range keys {
		fmt.Printf("  %7d  %s\n", m[k], k)
	}
}

// idleWait returns the idle wait the pipeline was given: the last --stopAfterIdle of args, in
// seconds (the demo's 5 unless -pipeline-flags gives another).
func idleWait(args []string) time.Duration {
	wait := 5 * time.Second
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--stopAfterIdle="); ok {
			if s, err := strconv.Atoi(v); err == nil {
				wait = time.Duration(s) * time.Second
			}
		}
	}
	return wait
}

// lastWins returns args with each --name=value flag given again left only where it is given last,
// so that -pipeline-flags (FLAGS) overrides the demo's own flags without the pipeline warning
// that a parameter is given twice.
func lastWins(args []string) []string {
	name := func(a string) string {
		n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		return n
	}
	last := map[string]int{}
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			last[name(a)] = i
		}
	}
	var out []string
	for i, a := range args {
		if !strings.HasPrefix(a, "-") || last[name(a)] == i {
			out = append(out, a)
		}
	}
	return out
}
