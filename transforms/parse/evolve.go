// Schema evolution in the parse stage (template parameter addNewColumns): a top-level field that
// no column takes becomes a new column, and the message is converted again against the table as
// it then is.

package parse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/evolve"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/schema"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/text"
)

// The counters of schema evolution: the ADD COLUMNs this worker ran that succeeded, and the
// messages converted again because a field of theirs was new to the worker's view of the table.
var (
	columnsAdded   = beam.NewCounter(flow.Namespace, "columns-added")
	messagesWaited = beam.NewCounter(flow.Namespace, "messages-waited-for-column")
)

// The bounds of waiting for a new column to be visible in system.columns: after an ALTER ON
// CLUSTER the server the worker is connected to may show it later than the one that ran it.
const (
	visibleWithin = 30 * time.Second
	visiblePoll   = 500 * time.Millisecond
	// refusedFor is how long a field whose ADD COLUMN the server refused stays refused without
	// asking the server again (an operator may fix a grant meanwhile).
	refusedFor = time.Minute
	// unreachableFor is how long, in a routed pipeline, a table whose server could not be reached
	// to add a column is not asked again (unreachable).
	unreachableFor = 30 * time.Second
)

// routedRetry is the retry policy of adding a column in a routed pipeline: one retry, where an
// unrouted one waits as a worker's start-up does (chclient.SetupRetry, about a minute and a
// half). The parse stages of every table run in the routing's stage, before each table's
// batches, so its wait holds up the messages of every table, and the routeTables promise is that
// one table's outage holds up only its own. routedWait bounds the whole, connecting included (a server that drops packets would
// take the dial timeout, 10 s, per attempt; a variable for tests).
var (
	routedRetry = chclient.Retry{MaxRetries: 1, InitialBackoff: 500 * time.Millisecond, MaxBackoff: time.Second}
	routedWait  = 5 * time.Second
)

// unreachable holds, per table (the key of added), when a routed pipeline's parse stage last
// could not read or alter it to add a column, and why: until unreachableFor has passed, no
// instance of the worker's parse stage asks that table for a column.
var unreachable = struct {
	sync.Mutex
	at  map[string]time.Time
	err map[string]error
}{at: map[string]time.Time{}, err: map[string]error{}}

// added counts, per table (added.key), the columns this worker process has added: the
// addNewColumnsMax of each worker, shared by the parse stage's DoFn instances of the process.
var added = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// reserve takes up to n of the limit columns of the table key for one message: it returns how
// many columns were taken before, and how many of the n it took (0 when limit were taken).
func reserve(key string, n, limit int) (before, granted int) {
	added.Lock()
	defer added.Unlock()
	before = added.n[key]
	granted = min(n, max(0, limit-before))
	added.n[key] = before + granted
	return before, granted
}

// taken returns how many columns of the table key reserve has taken.
func taken(key string) int {
	added.Lock()
	defer added.Unlock()
	return added.n[key]
}

// release gives back n columns reserve took, which this worker did not add after all.
func release(key string, n int) {
	added.Lock()
	defer added.Unlock()
	added.n[key] -= n
}

// evolver is the parse stage's schema evolution for one DoFn instance.
type evolver struct {
	checker *evolve.Checker
	rule    evolve.Rule // the server's types, read in Setup
	key     string      // the table's key in added
	// refused holds, per field, the server's refusal of its ADD COLUMN and when it came.
	refused map[string]refusedDDL
	// sweepAt is the size of refused at which refuse next drops the refusals older than
	// refusedFor.
	sweepAt int
}

// minSweep is the least size of evolver.refused at which refuse drops the refusals older than
// refusedFor.
const minSweep = 64

// refuse keeps r, the refusal of field name's column, for refusedFor. Once the refusals kept
// have doubled since the last sweep (at minSweep first), those older than refusedFor go: a
// stream whose field names are its data (a session id as a key) brings a new one in most
// messages, and while the server refuses its ADD COLUMNs (a grant revoked, a cluster gone, a
// column of a type without converter added), each refusal, kept for the life of the worker,
// grew the memory without end.
func (e *evolver) refuse(name string, r *evolve.Refusal) {
	if len(e.refused) >= e.sweepAt {
		for n, d := range e.refused {
			if time.Since(d.at) >= refusedFor {
				delete(e.refused, n)
			}
		}
		e.sweepAt = max(minSweep, 2*len(e.refused))
	}
	e.refused[name] = refusedDDL{r, time.Now()}
}

type refusedDDL struct {
	r  *evolve.Refusal
	at time.Time
}

// newEvolver returns the evolver of f's configuration, nil when addNewColumns is off.
func (f *parseFn) newEvolver() (*evolver, error) {
	if !f.AddNewColumns {
		return nil, nil
	}
	c, err := evolve.NewChecker(f.Limits)
	if err != nil {
		return nil, err
	}
	return &evolver{checker: c, key: f.ClickHouse.URL + "\x00" + f.ClickHouse.Database + "\x00" + f.Table, refused: map[string]refusedDDL{}}, nil
}

// addColumns adds the columns of m's new fields, which conv (the converter m was converted with)
// says no column takes, and reports whether the table's schema was read again (m must then be
// converted again, with f.tracker's converter). dead is the reason m is a dead letter: a field
// given twice, or new fields refused (by a limit, their names, or the server) while
// unknownFieldsColumn is unset; with it, refused fields stay there. err fails the bundle: the
// server could not be reached (after retries), or a column added is not visible in time.
func (f *parseFn) addColumns(ctx context.Context, conv *convert.Converter, m flow.Message) (reread bool, dead, err error) {
	e := f.evolver
	fresh, refused, walk := e.checker.Fields(conv, m.Data, nil)
	// A field whose ADD COLUMN the server refused a moment ago is refused again without asking.
	fresh = slices.DeleteFunc(fresh, func(n evolve.Field) bool {
		d, ok := e.refused[n.Name]
		if !ok || time.Since(d.at) >= refusedFor {
			return false
		}
		r := *d.r
		r.Value = text.Cut(n.Value, 100)
		refused = append(refused, &r)
		return true
	})
	switch {
	case walk != nil:
		return false, walk, nil
	case len(refused) > 0 && f.FromMessage.UnknownFields == "":
		return false, evolve.Refusals(refused), nil
	case len(fresh) == 0:
		f.logKept(refused)
		return false, nil, nil
	}
	if done := taken(e.key); done >= e.checker.Limits().Max {
		// No column left to add: no need to ask the server (a column another worker added
		// meanwhile is taken at the next schema refresh).
		for _, n := range fresh {
			refused = append(refused, e.checker.Beyond(n.Name, n.Value, done, len(fresh)))
		}
		if f.FromMessage.UnknownFields == "" {
			return false, evolve.Refusals(refused), nil
		}
		f.logKept(refused)
		return false, nil, nil
	}

	// pending are the fields that are not columns yet, which a routed message's dead letter names
	// when routedWait runs out: all of them until the table is read again, then those of the
	// ADD COLUMNs not yet done, then those added but not yet visible.
	pending := fresh
	if f.Routed {
		unreachable.Lock()
		at, why := unreachable.at[e.key], unreachable.err[e.key]
		unreachable.Unlock()
		if !at.IsZero() && time.Since(at) < unreachableFor {
			if err := ctx.Err(); err != nil {
				return false, nil, err
			}
			return false, f.notNow(fresh, refused, fmt.Errorf("it was not asked: the last attempt, %v ago, failed: %w", time.Since(at).Round(time.Second), why)), nil
		}
		// The attempts below, bounded: the parse stage's messages of every table wait for them.
		bctx, cancel := context.WithTimeout(ctx, routedWait)
		defer cancel()
		outer := ctx
		ctx = bctx
		defer func() { // a bound that ran out is the table's failure, not the bundle's end
			if err != nil && bctx.Err() != nil && outer.Err() == nil {
				dead, err = f.tableAway(outer, pending, refused, err)
			}
		}()
	}

	c, err := f.openRetrying(ctx)
	if err != nil {
		dead, err := f.tableAway(ctx, fresh, refused, err)
		return false, dead, err
	}
	defer c.Close()
	// Another worker may have added them already.
	if err := f.refreshOn(ctx, c, f.ddlRetry()); err != nil {
		if changed := (*convert.ChangedError)(nil); errors.As(err, &changed) {
			return false, f.unusable(fresh, refused, changed), nil
		}
		dead, err := f.tableAway(ctx, fresh, refused, err)
		return false, dead, err
	}
	reread = true
	// (A copy: DeleteFunc moves the fields it keeps to the front and zeroes the rest, which fresh,
	// and so pending until below, would then hold.)
	missing := slices.DeleteFunc(slices.Clone(fresh), func(n evolve.Field) bool { return f.hasColumn(n.Name) })
	// The group rule again, against the table as it is now: a column another worker or a person
	// added since this bundle's schema (x, or n.a of a Nested) may put a new field under it.
	now := f.tracker.Converter()
	missing = slices.DeleteFunc(missing, func(n evolve.Field) bool {
		if r := e.checker.Check(n.Name, n.Value, now.GroupOf(n.Name)); r != nil {
			refused = append(refused, r)
			return true
		}
		return false
	})
	// The limit first: a message that is a dead letter adds no column.
	before, granted := reserve(e.key, len(missing), e.checker.Limits().Max)
	reserved := missing[:granted]
	for _, n := range missing[granted:] {
		refused = append(refused, e.checker.Beyond(n.Name, n.Value, before, len(missing)))
	}
	if len(refused) > 0 && f.FromMessage.UnknownFields == "" {
		release(e.key, granted)
		return reread, evolve.Refusals(refused), nil
	}
	var asked []string
	var added []evolve.Field
	for i, n := range reserved {
		pending = reserved[i:]
		r, err := f.addColumn(ctx, c, n)
		if err != nil {
			release(e.key, len(reserved)-i-1) // addColumn gave back its own
			dead, err := f.tableAway(ctx, reserved[i:], refused, err)
			return reread, dead, err
		}
		if r != nil {
			e.refuse(n.Name, r)
			refused = append(refused, r)
			continue
		}
		asked = append(asked, n.Name)
		added = append(added, n)
	}
	pending = added
	if len(refused) > 0 && f.FromMessage.UnknownFields == "" {
		return reread, evolve.Refusals(refused), nil
	}
	f.logKept(refused)
	if len(asked) == 0 {
		return reread, nil, nil // every column was there already: the schema just read has them
	}
	return reread, nil, f.waitVisible(ctx, c, asked)
}

// addColumn runs the ADD COLUMN of field n through c, retrying what a retry can change
// (chclient.Transient, with chclient.SetupRetry). It returns the refusal of a DDL the server
// refuses (any other failure), and an error when the server stays unreachable. A column that
// exists already (another worker added it) is success. The reservation of the column (reserve)
// is kept only for a column this worker added, or may have: one that exists at a retry after an
// attempt that failed once the statement could have reached the server (its answer lost), which
// that attempt may have added.
func (f *parseFn) addColumn(ctx context.Context, c driver.Conn, n evolve.Field) (*evolve.Refusal, error) {
	e := f.evolver
	def := e.rule.Definition(n.Kind)
	ddl := e.rule.Server.AddColumn(f.ClickHouse.Database, f.Table, n.Name, def, e.checker.Limits().OnCluster)
	lost := false // an attempt failed after connecting: the server may have run the statement
	_, err := f.ddlRetry().DoIf(ctx, func() error { return c.Exec(ctx, ddl) },
		func(err error) bool { return chclient.Classify(err) == chclient.Transient },
		func(attempt int, err error) {
			var op *net.OpError
			lost = lost || !errors.As(err, &op) || op.Op != "dial"
			slog.Warn("parse: adding a column failed; retrying", "table", f.Table, "column", n.Name, "attempt", attempt, "error", err)
		})
	switch {
	case err == nil, lost && evolve.AlreadyExists(err):
		columnsAdded.Inc(ctx, 1)
		f.byTable.Inc(ctx, "columns-added", 1)
		slog.Info("parse: added a column for a new field", "table", f.Table, "column", n.Name, "type", def, "value", text.Cut(n.Value, 100))
		return nil, nil
	case evolve.AlreadyExists(err):
		release(e.key, 1)
		return nil, nil
	case chclient.Classify(err) == chclient.Transient || ctx.Err() != nil:
		release(e.key, 1)
		return nil, fmt.Errorf("adding the column %q to %s.%s: %w", n.Name, f.ClickHouse.Database, f.Table, err)
	}
	release(e.key, 1)
	f.logRefused(n.Name, ddl, err)
	return &evolve.Refusal{Param: evolve.ParamAdd, Field: n.Name, Value: text.Cut(n.Value, 100),
		Rule: fmt.Sprintf("cannot become a column: the server refused %s: %v", ddl, chclient.ServerError(err)), Err: err}, nil
}

// waitVisible reads the schema through c until every column of names is in it: at once on a
// single server, where the ALTER has changed the table when it returns; after an ALTER ON
// CLUSTER, until the server c is connected to shows it, up to visibleWithin. A column that a
// refresh never shows is an error (the bundle is retried).
func (f *parseFn) waitVisible(ctx context.Context, c driver.Conn, names []string) error {
	deadline := time.Now().Add(visibleWithin)
	for {
		if err := f.refreshOn(ctx, c, chclient.SetupRetry); err != nil {
			return err
		}
		i := slices.IndexFunc(names, func(n string) bool { return !f.hasColumn(n) })
		if i < 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the column %q added to %s.%s is not in the server's system.columns after %v", names[i], f.ClickHouse.Database, f.Table, visibleWithin)
		}
		t := time.NewTimer(visiblePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// hasColumn reports whether the table, as f.tracker last read it, has a column of that name.
func (f *parseFn) hasColumn(name string) bool {
	return slices.ContainsFunc(f.tracker.Schema().Columns, func(c schema.Column) bool { return c.Name == name })
}

// maxKeptLogged is how many refused fields kept in unknownFieldsColumn logKept logs per table and
// worker: a stream whose field names are its data (a session id as a key) brings a new one in
// most messages, and a line for each, each kept by chclient.LogOnce for the life of the worker,
// grew the log and the memory without end.
const maxKeptLogged = 100

// logged counts the lines of a kind logKept and logRefused have logged, by "kept" or
// "refused", the table (the key of added) and, for refusals, the server's error code.
var logged = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// logKept logs, once per field and worker, each refused field kept in unknownFieldsColumn, its
// name cut to 100 bytes (a name of any length is a field, and a line over 256 KB is more than
// Cloud Logging takes), for the first maxKeptLogged fields of the table; then, once, that it logs
// no more.
func (f *parseFn) logKept(refused []*evolve.Refusal) {
	if len(refused) == 0 {
		return
	}
	key := "kept\x00" + f.evolver.key
	logged.Lock()
	defer logged.Unlock()
	for _, r := range refused {
		if logged.n[key] >= maxKeptLogged {
			chclient.LogOnce("parse: more new fields do not become columns; they are kept in "+convert.OptionUnknownFields.String()+
				" without a line each", "table", f.Table, "fields logged", maxKeptLogged)
			return
		}
		if chclient.LogOnce("parse: a new field does not become a column; it is kept in "+convert.OptionUnknownFields.String(),
			"table", f.Table, "field", text.Cut(r.Field, 100), "rule", r.Param+": "+r.Rule) {
			logged.n[key]++
		}
	}
}

// logRefused logs the server's refusal of ddl, the ADD COLUMN of column, for the first
// maxKeptLogged refusals of the table with the same error code (chclient.Code; 0 for an error
// that is not the server's), then once that it logs no more of that code: a stream whose field
// names are its data, while the server refuses every ADD COLUMN (a grant revoked, a cluster of
// addNewColumnsOnCluster gone), logged a line for almost every message (16,377 for 20,000). A
// refusal with another code, a new cause, is logged as the first of its code.
func (f *parseFn) logRefused(column, ddl string, err error) {
	code, _ := chclient.Code(err)
	key := "refused\x00" + f.evolver.key + "\x00" + strconv.Itoa(int(code))
	logged.Lock()
	defer logged.Unlock()
	if logged.n[key] >= maxKeptLogged {
		chclient.LogOnce("parse: the server refuses more ADD COLUMNs with this error code; they are not logged one by one (each message's dead letter, or the field in "+
			convert.OptionUnknownFields.String()+", still says why)", "table", f.Table, "code", code, "refusals logged", maxKeptLogged)
		return
	}
	logged.n[key]++
	slog.Warn("parse: the server refused to add a column", "table", f.Table, "column", text.Cut(column, 100), "statement", text.Cut(ddl, 1000), "error", err)
}

// openRetrying opens a connection to the server for adding columns, retrying a failure by
// ddlRetry, but for credentials refused: the server was reached when the stage started, so a
// failure now is most likely an outage that ends.
func (f *parseFn) openRetrying(ctx context.Context) (driver.Conn, error) {
	var c driver.Conn
	_, err := f.ddlRetry().DoIf(ctx, func() error {
		var err error
		c, err = f.ch.Open(ctx)
		return err
	}, func(err error) bool {
		// Credentials refused are not an outage that ends.
		var ce *chclient.ConfigError
		return !errors.As(err, &ce) || ce.Field != chclient.FieldPassword && ce.Field != chclient.FieldUsername
	}, func(attempt int, err error) {
		slog.Warn("parse: connecting to add a column failed; retrying", "table", f.Table, "attempt", attempt, "error", err)
	})
	return c, err
}

// ddlRetry is the retry policy of reaching the server to add columns: chclient.SetupRetry, or
// routedRetry in a routed pipeline.
func (f *parseFn) ddlRetry() chclient.Retry {
	if f.Routed {
		return routedRetry
	}
	return chclient.SetupRetry
}

// reachable clears the table's mark in unreachable when a read of its schema that began at
// since, after the failure that set the mark, succeeded: the table is back, and its messages with
// new fields need not wait out unreachableFor as dead letters.
func (e *evolver) reachable(since time.Time) {
	unreachable.Lock()
	defer unreachable.Unlock()
	if at, ok := unreachable.at[e.key]; ok && since.After(at) {
		delete(unreachable.at, e.key)
		delete(unreachable.err, e.key)
	}
}

// tableAway tells what becomes of a message whose fields could not become columns because the
// table could not be read or altered (err: its server unreachable, the table detached).
// Unrouted, or when ctx has ended, the bundle fails with err (dead is nil), and the runner retries
// it. In a routed pipeline the message does not wait, which would hold up the messages of every
// table (fail is nil): dead names each field and the failure, or is nil with unknownFieldsColumn
// (the fields stay there), with refused beside them; and the table is not asked again for
// unreachableFor (err is noted in unreachable).
func (f *parseFn) tableAway(ctx context.Context, fields []evolve.Field, refused []*evolve.Refusal, err error) (dead, fail error) {
	if !f.Routed || ctx.Err() != nil {
		return nil, err
	}
	unreachable.Lock()
	unreachable.at[f.evolver.key], unreachable.err[f.evolver.key] = time.Now(), err
	unreachable.Unlock()
	return f.notNow(fields, refused, err), nil
}

// notNow returns the dead letter of a routed message whose fields could not become columns now
// (tableAway): nil with unknownFieldsColumn.
func (f *parseFn) notNow(fields []evolve.Field, refused []*evolve.Refusal, err error) error {
	for _, n := range fields {
		refused = append(refused, &evolve.Refusal{Param: evolve.ParamAdd, Field: n.Name, Value: text.Cut(n.Value, 100),
			Rule: fmt.Sprintf("cannot become a column now: the table %s.%s could not be read or altered to add it (%v); with routeTables a message "+
				"does not wait for its table, which would hold up the messages of every table: replay the dead letter once the table is back",
				f.ClickHouse.Database, f.Table, err), Err: err})
	}
	if f.FromMessage.UnknownFields == "" {
		return evolve.Refusals(refused)
	}
	f.logKept(refused)
	return nil
}

// unusable returns what becomes of a message whose new fields cannot become columns because the
// table, read again to add them, can no longer be converted to (changed): each field is refused
// for refusedFor without reading the table again, and the message is a dead letter naming the
// fields and the table's change, or, with unknownFieldsColumn, a row of the table as the worker
// read it before, the fields kept there (nil). The worker's other messages go on.
func (f *parseFn) unusable(fields []evolve.Field, refused []*evolve.Refusal, changed *convert.ChangedError) error {
	for _, n := range fields {
		r := &evolve.Refusal{Param: evolve.ParamAdd, Field: n.Name, Value: text.Cut(n.Value, 100),
			Rule: fmt.Sprintf("cannot become a column now: the table, read again to add it, can no longer be converted to (%v); "+
				"the worker goes on with the table as it read it before, without the field", changed), Err: changed}
		f.evolver.refuse(n.Name, r)
		refused = append(refused, r)
	}
	if f.FromMessage.UnknownFields == "" {
		return evolve.Refusals(refused)
	}
	f.logKept(refused)
	return nil
}

// refreshOn reads the table's schema through c, retrying what a retry can change by retry: not
// a table that can no longer be converted to (convert.ChangedError).
func (f *parseFn) refreshOn(ctx context.Context, c driver.Conn, retry chclient.Retry) error {
	_, err := retry.DoIf(ctx, func() error { return f.tracker.Refresh(ctx, c) },
		func(err error) bool {
			var changed *convert.ChangedError
			return chclient.Classify(err) == chclient.Transient && !errors.As(err, &changed)
		},
		func(attempt int, err error) {
			slog.Warn("parse: reading the table's schema failed; retrying", "table", f.Table, "attempt", attempt, "error", err)
		})
	return err
}
