// Command pubsub-to-clickhouse is the pipeline's launcher: the Flex Template's binary on
// Dataflow, and the command that runs the pipeline locally on prism.
//
//	pubsub-to-clickhouse --inputSubscription=projects/p/subscriptions/s --clickHouseUrl=clickhouse://host:9000 \
//	    --clickHouseDatabase=db --clickHouseTable=events --clickHouseUsername=default --clickHousePassword= \
//	    --clickHouseDeadLetterTable=events_dead_letter [--runner=dataflow ...]
//
// It parses the flags (the template parameters, see package pipeline, and Beam's own), validates
// them, checks the JavaScript UDF, the ClickHouse table and the dead-letter destinations (so that a
// launch with a wrong file, table, password or host stops at once with a clear message), builds the
// graph and runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx" // the runners, the optimized runtime, the file systems

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
	"github.com/ch-beam/pubsub-to-clickhouse/pipeline/localrunner"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/deadletter"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/evolve"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/parse"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/source"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/udf"
)

func main() {
	if wantsVersion(os.Args[1:]) {
		fmt.Println("pubsub-to-clickhouse", Version())
		return
	}
	if len(os.Args) > 1 {
		// A subcommand comes first (the Flex Template launcher passes only flags).
		if c, ok := lookupCommand(os.Args[1]); ok {
			os.Exit(runCommand(context.Background(), c, os.Args[2:]))
		}
	}
	var o pipeline.Options
	pipeline.RegisterFlags(flag.CommandLine, &o)
	flag.CommandLine.Usage = func() { printHelp(flag.CommandLine.Output(), flag.CommandLine) }
	params := templateParams()
	args, notes, err := normalizeArgs(flag.CommandLine, params, os.Args[1:])
	if err == nil {
		err = refuseUnknown(notes, os.Args[1:], os.Getenv("FLEX_TEMPLATE_GO_BINARY") != "")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pubsub-to-clickhouse:", err)
		os.Exit(2)
	}
	if err := parseMainFlags(flag.CommandLine, args); errors.Is(err, flag.ErrHelp) {
		return
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "pubsub-to-clickhouse:", err)
		os.Exit(exitUsage)
	}
	if rest := flag.CommandLine.Args(); len(rest) > 0 && len(rest) == len(os.Args)-1 && !strings.HasPrefix(rest[0], "-") {
		// The first argument is neither a flag nor a subcommand.
		fmt.Fprintf(os.Stderr, "pubsub-to-clickhouse: %q is not a command (the commands are %s; without one the pipeline runs, "+
			"and takes only flags): see pubsub-to-clickhouse --help\n", rest[0], commandNames())
		os.Exit(2)
	}
	if rest := flag.CommandLine.Args(); len(rest) > 0 {
		// A value given as a separate argument to a boolean flag (--insertDeduplicate false)
		// ends the flags there: the flags after it would be dropped unseen.
		are := "are not flags"
		if len(rest) == 1 {
			are = "is not a flag"
		}
		fmt.Fprintf(os.Stderr, "pubsub-to-clickhouse: %s after the flags, from argument %d%s on, %s: "+
			"give each flag as --name=value (a boolean flag takes --name=false, not a separate value); the program takes no other arguments\n",
			count(len(rest), "argument"), len(os.Args)-len(rest), strayShown(os.Args[len(os.Args)-len(rest)-1], rest[0]), are)
		os.Exit(2)
	}
	beam.Init()
	slog.SetDefault(slog.New(runnerFilter{slog.Default().Handler()}))
	if secrets := o.ClickHouse().TextSecrets(); len(secrets) > 0 {
		// The Dataflow runner logs the pipeline model, whose DoFns then hold the password.
		slog.SetDefault(slog.New(modelFilter{slog.Default().Handler(), secrets}))
	}
	if path := os.Getenv("PUBSUB_TO_CLICKHOUSE_CPUPROFILE"); path != "" {
		// For profiling a local run: go tool pprof <binary> <path>.
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	slog.Info("pubsub-to-clickhouse", "version", Version())
	slog.Info("arguments", "args", strings.Join(redactArgs(flag.CommandLine, os.Args[1:], o.ClickHousePassword), " "))
	for _, n := range notes {
		slog.Info("argument of another SDK's form", "flag", n.Flag, "done", n.What)
	}
	for _, name := range repeatedParams(params, args) {
		// The name only: the values may be a password, or a URL that holds one.
		slog.Warn("template parameter given more than once, with different values: the last one is used", "parameter", name)
	}
	if err := run(context.Background(), o); err != nil {
		// Once, on stderr (which the Flex Template launcher's log keeps), not also as a log line.
		fmt.Fprintln(os.Stderr, "pubsub-to-clickhouse:", err)
		pprof.StopCPUProfile()
		if i := (interrupted{}); errors.As(err, &i) {
			os.Exit(i.code())
		}
		os.Exit(exitCode(err))
	}
}

func run(ctx context.Context, o pipeline.Options) error {
	checked, err := o.Check() // the one validation of the launch: Build takes its result
	if err != nil {
		return badArgs(fmt.Errorf("invalid template parameters:\n%w", err))
	}
	l, err := launchFromFlags(ctx)
	if err != nil {
		return badArgs(err)
	}
	if !l.dataflow {
		localrunner.Configure()
		quietRunner.Store(true) // the runner's INFO lines are its own business; its warnings pass
	}
	if l.dataflow && o.ClickHouse().PasswordAsText() {
		// On a local run the job graph stays in this process: nobody else reads it.
		slog.Warn("a password is given as text (clickHousePassword, or in clickHouseUrl: its own, an option such as ?password=, or its http_proxy's): " +
			"it travels with the job graph, where readers of the job and of its staging location can read it; keep ClickHouse's password in Secret Manager " +
			"and give its secret version, " + secret.VersionForm + ", as clickHousePassword (docs/deploy.md); a proxy's password has no such form")
	}
	src := pipeline.LocalSource
	if l.dataflow {
		if err := noLocalFiles(o); err != nil {
			return badArgs(err)
		}
		src = pipeline.DataflowSource
		if host := os.Getenv("PUBSUB_EMULATOR_HOST"); host != "" {
			// Left over from a local run (the README exports it): the checks below would look in
			// the emulator, the workers in Pub/Sub itself.
			slog.Warn("PUBSUB_EMULATOR_HOST is set: the start-up checks look for the subscription and topic in the emulator at "+host+
				", while the job's workers use Pub/Sub itself; unset it for a Dataflow launch (unset PUBSUB_EMULATOR_HOST)", "PUBSUB_EMULATOR_HOST", host)
		}
		if o.StopAfterIdle.Given {
			// The template does not offer it, and run.sh refuses it; a direct launch may still give it.
			slog.Warn("stopAfterIdle has no effect on Dataflow, whose source is Dataflow's own Pub/Sub read: the job runs until it "+
				"is drained or cancelled (gcloud dataflow jobs drain)", "stopAfterIdle", o.StopAfterIdle.Value)
		}
		// The launcher does not pass itself on as the worker binary.
		givenWorker := *jobopts.WorkerBinary != ""
		if !givenWorker {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding the worker binary: %w", err)
			}
			*jobopts.WorkerBinary = exe
		}
		if err := checkWorkerBinary(*jobopts.WorkerBinary, givenWorker); err != nil {
			return badArgs(err)
		}
		if l.submits() && !*jobopts.Async {
			// A streaming job never completes: waiting for it would never end the command.
			*jobopts.Async = true
		}
		if err := checkMachineType(); err != nil {
			return badArgs(err)
		}
		if err := checkLocations(); err != nil {
			return badArgs(err)
		}
	}
	if err := checkUpdateFlags(); err != nil {
		return badArgs(err)
	}
	if cfg, ok := o.UDF(); ok && l.dataflow && !udf.IsGCS(cfg.Path) {
		return badArgs(fmt.Errorf("javascriptTextTransformGcsPath %q: on Dataflow the file must be in Cloud Storage, gs://<bucket>/<object>: "+
			"the workers cannot read a file of this machine", cfg.Path))
	}
	if l.dataflow {
		if err := checkRequired(l); err != nil {
			return badArgs(err)
		}
		if needsCredentials(l) {
			if err := checkCredentials(ctx); err != nil {
				return err
			}
		}
	}
	mode := o.Mode()
	slog.Info("launch", "runner", l.runner, "mode", l.String())
	if l.dataflow {
		slog.Info("streaming mode", "mode", streamingMode(), "service options", stringFlag("dataflow_service_options"))
	}
	// The lines below show the parameters' values as given, less what may be secret (a password
	// that also appears in another value, PEM text): from the redacted copy, never from o.
	shown := o.Redacted()
	slog.Info("source", "subscription", shown.InputSubscription, "source", src.String())
	slog.Info("window mode", "mode", mode.String(), "numShards", o.Shards(src, intFlag("max_num_workers")), "shuffleCompression", o.Compression().String())
	if !l.dataflow && mode.Window >= 10*time.Second {
		// Said once, at start-up: a first local run otherwise looks as if nothing arrives.
		sooner := ""
		if mode.Rows > 0 {
			sooner = fmt.Sprintf(" (sooner once a batch has %d rows)", mode.Rows)
		}
		slog.Info(fmt.Sprintf("rows reach the table in batches, up to %v after their messages arrive%s: "+
			"for a quicker look at a local run give a shorter --windowSeconds, e.g. --windowSeconds=2", mode.Window, sooner))
	}
	slog.Info("dead-letter destinations", "table", orNone(shown.ClickHouseDeadLetterTable), "topic", orNone(shown.DeadLetterTopic))
	slog.Info("target", "clickHouseUrl", o.RedactedURL(), "table", shown.ClickHouseDatabase+"."+shown.ClickHouseTable, "user", shown.ClickHouseUsername)
	if spec, ok := o.Routing(); ok { // not shown's: a value with the password hidden may not parse
		unlisted := "dead letters (routeUnlisted=deadLetter)"
		if spec.Unlisted != "" { // clickHouseTable
			unlisted = shown.ClickHouseDatabase + "." + shown.ClickHouseTable
		}
		slog.Info("routing", "routeBy", shown.RouteBy, "routeTables", shown.RouteTables, "unlisted values", unlisted)
	}
	if cfg, ok := shown.UDF(); ok {
		slog.Info("javascript UDF", "path", cfg.Path, "function", cfg.Function, "reload", orNever(cfg.Reload), "timeout per message", udf.DefaultTimeout)
	}

	stopProgress := func() {}
	if !l.dataflow && o.ProgressSeconds > 0 {
		stopProgress = startProgress(o.InputSubscription, time.Duration(o.ProgressSeconds)*time.Second)
		defer stopProgress()
	}
	if l.dryRun {
		slog.Info("dry run: the JavaScript UDF, the ClickHouse table and the dead-letter destinations are not checked")
	} else if err := preflight(ctx, o); err != nil {
		return err
	} else if !l.dataflow {
		checkOrderedDelivery(ctx, o)
	}

	upd, err := findRunningJob(ctx, l)
	if err != nil {
		return err
	}

	stopDrain := func() os.Signal { return nil }
	if !l.dataflow {
		// Made once the start-up checks are done: an interrupt during them ends the process at
		// once, which would leave the directory behind.
		removeTempDir := localrunner.TempDir()
		defer removeTempDir()
		stopDrain = drainOnInterrupt(removeTempDir)
	}
	p, s := beam.NewPipelineWithRoot()
	pipeline.Build(s, checked, src)
	res, err := beam.Run(ctx, l.runner, p)
	if !l.dataflow {
		// Acknowledgements of stored messages that Pub/Sub did not take (unreachable) are retried
		// until their ack deadline: wait for them, a second signal still stopping the wait.
		psclient.AwaitRetries(ctx)
	}
	// The run has ended: a signal from here on ends the process as it would without the drain.
	drained := stopDrain()
	stopProgress() // its last line: the counts as the run ended, before any give-back
	givenBack := 0
	if !l.dataflow {
		givenBack = releaseUnacknowledged(ctx, err == nil)
	}
	if err != nil && sameNameReturned.Load() {
		// The service refused the job (409), and the runner could not look up the active job of
		// that name (without dataflow.jobs.list, which the check before staging warned of).
		return fmt.Errorf("--job_name=%s: nothing was submitted: a job of that name is active in projects/%s/locations/%s, and "+oneActiveJob+
			" (the runner could not look that job up: %w)", stringFlag("job_name"), l.project, l.region, err)
	}
	if err != nil && l.dataflow {
		return missingBucket(err, l)
	}
	if err != nil {
		if !l.dataflow {
			// What the run counted until it failed (insert-retries, dead letters), which its error
			// does not say; the failed bundle's last counts (its insert-failures) never reach the
			// runner (docs/operations.md).
			if line := failedMetricsLine(res); line != "" {
				fmt.Println(line)
			}
		}
		return err
	}
	if upd.jobID != "" && l.template != "" {
		if err := markReplacement(ctx, l.template, upd); err != nil {
			return err
		}
	}
	if err := report(os.Stdout, res, l); err != nil {
		return err
	}
	if drained != nil {
		return interrupted{sig: drained, givenBack: givenBack, ackFailed: psclient.AckFailures()}
	}
	return nil
}

// interrupted is run's error after a local run that an interrupt or a SIGTERM drained
// (drainOnInterrupt): every message it read was stored, dead-lettered or dropped by the UDF, and
// acknowledged unless Pub/Sub did not take the acknowledgement (ackFailed), but the run did not
// end by itself, and the process exits as a shell reports a process ended by the signal (code).
type interrupted struct {
	sig       os.Signal
	givenBack int   // messages read and not acknowledged when the run ended, a fault (releaseUnacknowledged)
	ackFailed int64 // messages stored whose acknowledgement Pub/Sub did not take (psclient.AckFailures)
}

func (i interrupted) Error() string {
	if i.givenBack > 0 {
		return fmt.Sprintf("interrupted (%v): drained, but %d messages read were neither stored, dead-lettered nor dropped, and were "+
			"given back (the warning above); the rest stay on the subscription for the next run", i.sig, i.givenBack)
	}
	if i.ackFailed > 0 {
		return fmt.Sprintf("interrupted (%v): drained, but the acknowledgements of %d messages stored failed (the warnings above): "+
			"Pub/Sub delivers them again, and the next run stores them a second time (in other batches: a deduplicating table too); the rest stay on the subscription "+
			"for the next run", i.sig, i.ackFailed)
	}
	return fmt.Sprintf("interrupted (%v): drained: the messages read were stored, dead-lettered or dropped by the javascript UDF, "+
		"and acknowledged; the rest stay on the subscription for the next run", i.sig)
}

// code is 130 for an interrupt, 143 for a SIGTERM: 128 and the signal's number.
func (i interrupted) code() int {
	if i.sig == syscall.SIGTERM {
		return 143
	}
	return 130
}

// releaseTimeout bounds releaseUnacknowledged.
const releaseTimeout = 10 * time.Second

// releaseUnacknowledged gives back, at the end of a local run, the messages the source pulled that
// were not acknowledged (a run that failed, or was stopped with rows still buffered): Pub/Sub
// redelivers them at once, so that a restart receives them, instead of after the ack deadline
// the source last extended (60 s) during which a restart would see nothing. After a run that
// ended by itself (ended: stopAfterIdle, the pipeline drained) every message read is a row, a
// dead letter or a drop of the UDF, and acknowledged: one given back then is a fault, and the
// line says so as a warning.
func releaseUnacknowledged(ctx context.Context, ended bool) (givenBack int) {
	// Best effort, and bounded: an unreachable Pub/Sub must not hold up the end of the run (the
	// client retries Unavailable until the deadline).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	n, err := psclient.ReleaseAll(ctx)
	if err != nil {
		slog.Warn("giving back the unacknowledged messages failed; they are redelivered once their ack deadline passes", "released", n, "error", err)
	} else if n > 0 && ended {
		slog.Warn("the pipeline ended without an error, yet messages it read were neither inserted, dead-lettered nor dropped by the "+
			"javascript UDF, so none was acknowledged: they are given back, and Pub/Sub redelivers them to the next run; this is a "+
			"fault of the pipeline, please report it with this log", "messages", n)
	} else if n > 0 {
		slog.Info("gave back the messages not acknowledged: Pub/Sub redelivers them at once, to the next run", "messages", n)
	}
	return n
}

// pullWait bounds the wait of a second signal for the local reader's Pull under way: a Pull
// takes at most 5 s (transforms/source).
const pullWait = 6 * time.Second

// drainOnInterrupt makes an interrupt (Ctrl-C, SIGINT) or a SIGTERM of a local run drain it, as
// Dataflow's drain does a job: the source pulls no more (source.Drain), and the pipeline inserts
// or dead-letters what it read, acknowledges it and ends, its batches flushed early, as after
// stopAfterIdle. Stopping at once instead, with the messages not acknowledged given back, would
// give back those whose INSERT had committed and whose acknowledgement had not gone out yet, and
// Pub/Sub would deliver them again (a second row). A drain waits for the INSERTs, so for their
// retries while ClickHouse is unreachable: a second signal stops at once, giving back the
// messages not acknowledged (releaseUnacknowledged) once the Pull under way has ended (so that its
// messages are among them; at most pullWait), which Pub/Sub redelivers at once to the next
// run instead of after the ack deadline last extended (60 s), and exits with status 130 or 143
// (by that signal), having removed the run's temporary directory (removeTempDir,
// localrunner.TempDir); a third ends the process as without this.
//
// stop, called once the run has ended, ends the handling and returns the signal that began a
// drain, nil if none did (run returns interrupted): a signal after it is not the run's, and
// ends the process as without this.
func drainOnInterrupt(removeTempDir func()) (stop func() os.Signal) {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done, finished := make(chan struct{}), make(chan struct{})
	var first os.Signal // written before finished is closed
	go func() {
		defer close(finished)
		select {
		case sig := <-signals:
			first = sig
			slog.Warn("interrupted: draining: no more messages are pulled; the rows under way are inserted and acknowledged, "+
				"then the run ends (interrupt again to stop at once, giving back the messages not acknowledged)", "signal", sig.String())
			source.Drain()
		case <-done:
			return
		}
		select {
		case sig := <-signals:
			signal.Stop(signals) // a third one ends the process as it would without this
			slog.Warn("interrupted again: stopping; giving back the messages not acknowledged (a row whose INSERT committed "+
				"and whose acknowledgement had not gone out comes again)", "signal", sig.String())
			// A Pull under way would lease its messages after the give-back: they would wait for
			// their ack deadline. It ends within the Pull's own timeout.
			if !source.PullsDone(pullWait) {
				slog.Warn("a Pull was still under way; the messages it returns wait for their ack deadline (60 s)", "waited", pullWait)
			}
			releaseUnacknowledged(context.Background(), false)
			removeTempDir() // os.Exit runs no deferred call
			os.Exit(interrupted{sig: sig}.code())
		case <-done:
		}
	}()
	return func() os.Signal {
		signal.Stop(signals)
		close(done)
		<-finished
		return first
	}
}

// checkOtherHosts warns of each host of a clickHouseUrl with several that a TCP connection does
// not reach within 5 s: the launch's own connection took the first that answers, so a host
// behind it that is down or misspelt (`clickhouse://ch1:9000,ch2:9000`) would show only when the
// hosts before it fail. Hosts reached through an http_proxy are not tried.
func checkOtherHosts(ctx context.Context, o pipeline.Options) {
	opts, err := o.ClickHouse().Options()
	if err != nil || len(opts.Addr) < 2 || opts.HTTPProxyURL != nil {
		return
	}
	for i, addr := range opts.Addr {
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			slog.Warn("clickHouseUrl: a host does not answer; the job's connections go to the other hosts while it does not "+
				"(check its name and port if it should)", "host", addr, "position", fmt.Sprintf("%d of %d", i+1, len(opts.Addr)), "error", err)
			continue
		}
		c.Close()
	}
}

// preflight checks, before the job starts, what every worker checks in its Setup: the JavaScript
// UDF's file and function, the table and its column types, the credentials, with addNewColumns
// that the user may add columns (evolve.CheckAlter), the dead-letter table and topic, which
// insert settings the server takes, and that it takes an INSERT into each table with them
// (chclient.CheckInsert, insertRefused); it warns of the hosts of clickHouseUrl after the first that
// do not answer (checkOtherHosts).
func preflight(ctx context.Context, o pipeline.Options) error {
	if cfg, ok := o.UDF(); ok {
		r, err := udf.Check(ctx, cfg)
		if err != nil {
			return err // it names its parameter
		}
		slog.Info("javascript UDF checked", "path", cfg.Path, "function", cfg.Function, "global functions", strings.Join(r.Functions, ", "),
			"on an empty payload it", r.EmptyPayload)
	}
	if err := psclient.Check(ctx, o.Subscription()); err != nil {
		return pipeline.Labelled(err, "")
	}
	// The password and the TLS material are read once, as each worker's Setup reads them.
	ch, err := o.ClickHouse().Resolve(ctx)
	if err != nil {
		return pipeline.Labelled(err, "")
	}
	conn, err := ch.Open(ctx)
	if err != nil {
		return pipeline.LabelledSettings(err, o)
	}
	defer conn.Close()
	if err := pipeline.FirstQuery(ctx, conn, o); err != nil {
		return err
	}
	checkOtherHosts(ctx, o)
	for _, table := range o.Tables() {
		if err := checkTable(ctx, conn, o, table); err != nil {
			return err
		}
	}
	if limits, ok := o.NewColumns(); ok {
		for _, table := range o.Tables() {
			if err := evolve.CheckAlter(ctx, conn, o.ClickHouseDatabase, table, o.ClickHouseUsername); err != nil {
				return fmt.Errorf("addNewColumns: %w", err)
			}
		}
		slog.Info("addNewColumns: new fields become columns", "at most per worker and table", limits.Max,
			"pattern", orNone(limits.Pattern), "excluded", orNone(o.AddNewColumnsExcluded), "on cluster", orNone(limits.OnCluster))
	}
	send, token, leftOut, err := chclient.ResolveSettings(ctx, conn, o.InsertSettings())
	if err != nil {
		return err
	}
	// An INSERT of no rows into each table, with the settings every INSERT carries: a readonly
	// profile, a missing grant or a constraint on one of the settings would refuse every INSERT,
	// which the write stage can only retry, holding every message.
	// The dead-letter table's is tried once the table is checked (below): a table missing, or a
	// View, is said there, not as a failed INSERT after which "the job starts all the same".
	checkInsert := func(table string) error {
		if err := chclient.CheckInsert(ctx, conn, o.ClickHouseDatabase, table, send); err != nil {
			if refused := insertRefused(err, o, table, send); refused != nil {
				return refused
			}
			// Not the user's right or a setting: what the INSERTs meet (a table engine's own
			// failure), which the write stage says and deals with.
			slog.Warn("an INSERT of no rows into the table failed at launch; the job starts all the same, and its INSERTs say what becomes of the rows",
				"table", o.ClickHouseDatabase+"."+table, "error", err)
		}
		return nil
	}
	for _, table := range o.Tables() {
		if err := checkInsert(table); err != nil {
			return err
		}
	}
	shown := maps.Clone(send) // send stays as the dead-letter table's INSERT of no rows sends it
	if token {
		shown[chclient.TokenSetting] = "(per INSERT)"
	}
	slog.Info("insert settings", "sent", fmt.Sprint(shown))
	chclient.LogLeftOut(leftOut) // a local run's write stage, in this process, does not say it again
	if o.ClickHouseDeadLetterTable != "" {
		columns, err := deadletter.Columns(ctx, conn, o.ClickHouseDatabase, o.ClickHouseDeadLetterTable)
		if err != nil {
			return pipeline.Labelled(err, "clickHouseDeadLetterTable")
		}
		if err := checkInsert(o.ClickHouseDeadLetterTable); err != nil {
			return err
		}
		// A Null table without a materialized view takes the dead letters and stores none: as the
		// only destination every dead letter would be lost, acknowledged.
		if why := schema.Discards(ctx, conn, o.ClickHouseDatabase, o.ClickHouseDeadLetterTable); why != "" {
			if o.DeadLetterTopic == "" {
				return pipeline.Labelled(fmt.Errorf("the table %s.%s stores nothing: %s; every dead letter would be lost: give the table a "+
					"materialized view that stores them first, or give a table that stores them: %s", o.ClickHouseDatabase, o.ClickHouseDeadLetterTable,
					why, deadletter.CreateTable(o.ClickHouseDatabase, o.ClickHouseDeadLetterTable)), "clickHouseDeadLetterTable")
			}
			slog.Warn("the dead-letter table stores nothing: "+why+"; the dead letters are kept on the dead-letter topic alone",
				"table", o.ClickHouseDatabase+"."+o.ClickHouseDeadLetterTable)
		}
		// A message routed by an attribute that comes back from the table without it names no
		// table: its dead letter cannot be replayed to where it belongs.
		if spec, ok := o.Routing(); ok && spec.By.Attribute && !slices.Contains(columns, "attributes") && o.DeadLetterTopic == "" {
			slog.Warn(fmt.Sprintf("routeBy %s: the dead-letter table has no column attributes, so its dead letters lose the attribute %q "+
				"that routes them, and replay gives them back without it (they are dead letters again); add it with: "+
				"ALTER TABLE %s.%s ADD COLUMN attributes String DEFAULT '{}'", spec.By, spec.By.Name,
				chclient.QuoteIdent(o.ClickHouseDatabase), chclient.QuoteIdent(o.ClickHouseDeadLetterTable)), "table", o.ClickHouseDeadLetterTable)
		}
	}
	if topic, ok := o.Topic(); ok {
		if err := psclient.Check(ctx, topic); err != nil {
			return pipeline.Labelled(err, "")
		}
		if err := psclient.CheckNotInput(ctx, o.Subscription(), topic); err != nil {
			return pipeline.Labelled(err, "")
		}
		// A dead letter's data is the message as it came in, often what could not be parsed: a
		// schema would refuse it, at every attempt, unless the input topic validates against the
		// same schema (then every message conforms).
		if schema, encoding, _ := psclient.TopicSchema(ctx, topic); schema != "" {
			slog.Warn("deadLetterTopic has a schema, and Pub/Sub refuses a message whose data does not conform to it: a dead letter's "+
				"data is the message as it came in (often what could not be parsed), so such a dead letter is refused at every attempt, "+
				"and its message stays unacknowledged and comes back; give a topic without a schema, unless the input topic has this "+
				"schema too", "topic", topic.String(), "schema", schema, "encoding", encoding)
		}
		// Pub/Sub keeps a message only for the subscriptions that exist when it is published.
		if subscribed, retained, known := psclient.TopicKeeps(ctx, topic); known && !subscribed && !retained {
			if o.ClickHouseDeadLetterTable == "" {
				return pipeline.Labelled(psclient.NoSubscriptionError(topic, "every dead letter published there"), "")
			}
			slog.Warn("deadLetterTopic has no subscription, and Pub/Sub delivers a message only to the subscriptions that exist when it is "+
				"published: the dead letters published there reach no one, and are kept in the dead-letter table alone; create a "+
				"subscription on it to read them", "topic", topic.String())
		}
	}
	return nil
}

// insertRefused is the launch's error for the server's refusal of an INSERT of no rows into
// table (chclient.CheckInsert) by clickHouseUsername, with what to do: a readonly profile (164
// READONLY), a missing grant (497 ACCESS_DENIED) or a constraint on a setting every INSERT
// carries (452, chclient.SettingRefused), which would refuse every INSERT alike. nil for another
// error.
func insertRefused(err error, o pipeline.Options, table string, send clickhouse.Settings) error {
	var what string
	switch code, _ := chclient.Code(err); {
	case code == 164:
		what = "the user's settings profile is readonly (readonly=1 or 2), which refuses every INSERT: give a user whose profile may write"
	case code == 497:
		what = fmt.Sprintf("grant it: GRANT INSERT ON %s.%s TO %s", chclient.QuoteIdent(o.ClickHouseDatabase), chclient.QuoteIdent(table), chclient.QuoteIdent(o.ClickHouseUsername))
	case chclient.SettingRefused(code):
		what = "a constraint of the user's settings profile refuses one of the settings every INSERT carries (" + fmt.Sprint(send) +
			": those of the parameters insertDeduplicate, insertDistributedSync, maxInsertBlockSize and insertQuorum): give the parameter a value " +
			"the constraint allows, or have it relaxed"
	default:
		return nil
	}
	return fmt.Errorf("%s: the server refuses an INSERT into %s.%s by %s %q (an INSERT of no rows, tried at launch): %w; %s",
		pipeline.ClickHouseParam(chclient.FieldUsername), o.ClickHouseDatabase, table, chclient.FieldUsername, o.ClickHouseUsername, err, what)
}

// checkOrderedDelivery warns, for a local run, of how the input subscription's message ordering
// meets the batches. On a subscription with message ordering, Pub/Sub holds back later messages
// of an ordering key while earlier ones are unacknowledged (the emulator, pstest, delivers one
// message of a key at a time; Pub/Sub's documentation says that messages of a key arrive in
// order and that a redelivery brings the later ones again, not how many it hands out at once),
// and the local source acknowledges a message only once its row is inserted or its dead letter
// written. So a batch gets few messages of each key at a time: with batchRowCount alone, a batch
// that fewer keys feed than it needs waits without end for messages Pub/Sub holds back until it
// is inserted (with stopAfterIdle the run ends idle, its backlog kept); with a window or a time
// bound, a key's backlog drains a delivery per windowSeconds (a fixed window a second later: it
// closes once the watermark, which trails the clock by a second, passes its end). Messages without an ordering key
// are not ordered, and a subscription of many keys may fill its batches all the same, so this
// warns rather than refuses. Dataflow acknowledges on receipt, before the INSERT, and is not
// concerned; a subscription Pub/Sub will not describe (pubsub.subscriptions.get denied) passes.
func checkOrderedDelivery(ctx context.Context, o pipeline.Options) {
	if ordered, known := psclient.MessageOrdering(ctx, o.Subscription()); !ordered || !known {
		return
	}
	const why = "Pub/Sub holds back later messages of an ordering key while earlier ones are unacknowledged (the emulator hands out " +
		"one of a key at a time), and the local runner acknowledges a message only once its row is inserted or its dead letter written"
	mode := o.Mode()
	if mode.Window == 0 {
		slog.Warn(fmt.Sprintf("inputSubscription has message ordering enabled: %s, so with batchRowCount (%d) alone a batch fed by "+
			"fewer ordering keys than it needs waits without end for messages that Pub/Sub holds back until the batch is inserted: "+
			"give windowSeconds as well (a batch is then inserted at most that long after its first row), or read from a "+
			"subscription without message ordering (messages without an ordering key are not held back)", why, mode.Rows),
			"subscription", o.InputSubscription)
		return
	}
	pace := mode.Window.String()
	if mode.Rows == 0 {
		pace += " and a second more (a window closes once the watermark, a second behind the clock, passes its end)"
	}
	slog.Warn(fmt.Sprintf("inputSubscription has message ordering enabled: %s, so each ordering key gives a batch few messages "+
		"(on the emulator one), about one delivery every %s: a backlog of one key drains at that pace; read from a subscription "+
		"without message ordering (the ordering_key metadata column and the dead letters keep the keys all the same) for throughput",
		why, pace), "subscription", o.InputSubscription)
}

// checkTable checks table (clickHouseTable or a table of routeTables) as each worker's parse
// stage does, and logs the columns that take their value from the message, and what
// unknownFieldsColumn takes.
func checkTable(ctx context.Context, conn driver.Conn, o pipeline.Options, table string) error {
	t, conv, err := parse.CheckWith(ctx, conn, o.ClickHouseDatabase, table, o.FromMessage())
	if err != nil {
		err = pipeline.Labelled(err, o.TableParam(table))
		// metadataColumns and unknownFieldsColumn hold for every routed table, and their errors
		// name the parameter, not the table: say which one refused them.
		var oe *convert.OptionError
		if _, routed := o.Routing(); routed && errors.As(err, &oe) {
			err = fmt.Errorf("%w (the table %s, of %s)", err, table, o.TableParam(table))
		}
		return err
	}
	slog.Info("table checked", "table", o.ClickHouseDatabase+"."+table, "writable columns", len(t.Writable()), "server time zone", t.ServerTimeZone)
	if t.Discards != "" {
		slog.Warn("the table stores none of the rows the job inserts: "+t.Discards+"; its messages will be acknowledged all the same. "+
			"Create the materialized view first, or give a table that stores rows", "table", o.ClickHouseDatabase+"."+table)
	}
	columns, sources := conv.Injected()
	for i, col := range columns {
		where := "ignored"
		if o.UnknownFieldsColumn != "" {
			where = "kept in unknownFieldsColumn " + strconv.Quote(o.UnknownFieldsColumn)
		}
		slog.Warn(fmt.Sprintf("%s: column %q takes its value from the message, not from the payload: a field %q of the payload is %s",
			sources[i], col, col, where), "table", table)
	}
	fills := map[string]string{} // the columns filled from the message, by name: which parameter fills them
	for _, m := range o.FromMessage().Metadata {
		fills[m.Column] = "metadataColumns"
	}
	if col := o.UnknownFieldsColumn; col != "" {
		fills[col] = "unknownFieldsColumn"
	}
	for _, col := range t.Columns {
		if param, ok := fills[col.Name]; ok && col.DefaultKind == "EPHEMERAL" && col.NotWritten == "" {
			slog.Warn(fmt.Sprintf("%s: column %q is EPHEMERAL, stored nowhere: what %s puts there is kept only by the DEFAULT expressions "+
				"that read the column", param, col.Name, param), "table", table)
		}
		if col.DefaultKind == "EPHEMERAL" && col.NotWritten != "" {
			slog.Warn(fmt.Sprintf("column %q is EPHEMERAL and not written: %s; so a field %q of the payload is ignored, and the DEFAULT "+
				"expressions that read the column get its own default (%s)", col.Name, col.NotWritten, col.Name, col.DefaultExpression), "table", table)
		}
	}
	if col := o.UnknownFieldsColumn; col != "" {
		slog.Info(fmt.Sprintf("unknownFieldsColumn: column %q takes the payload's fields that give the row no value, "+
			"as one JSON object of their text (or one Map entry each); a field %q of the payload is one of them", col, col), "table", table)
	}
	return nil
}

// noLocalFiles refuses, for a Dataflow launch, a certificate or key given as a file path: each
// worker reads it in Setup, and Dataflow's workers do not have the launcher's files.
func noLocalFiles(o pipeline.Options) error {
	for _, p := range o.ClickHouse().TLSParams() {
		if p.Ref != "" && secret.KindOf(p.Ref) == secret.File {
			return fmt.Errorf("%s %q: a file path is read on each worker, and Dataflow's workers do not have the launcher's files: "+
				"give a gs://<bucket>/<object> or a Secret Manager secret version (%s) instead", pipeline.ClickHouseParam(p.Field), p.Ref, secret.VersionForm)
		}
	}
	return nil
}

// templateParams returns the names of the template parameters.
func templateParams() []string {
	fs := flag.NewFlagSet("params", flag.ContinueOnError)
	var o pipeline.Options
	pipeline.RegisterFlags(fs, &o)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// orNever shows a reload interval: "never" for 0.
func orNever(d time.Duration) string {
	if d <= 0 {
		return "never"
	}
	return d.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
