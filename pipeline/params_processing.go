// The parameter table, second part: what becomes of the messages, dead letters, batching, the
// inserts' settings, the local runner's flags, the schema, the columns that take no payload field
// and the JavaScript UDF (see params.go).

package pipeline

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/route"
)

// processingParameters are the parameters after the ClickHouse connection's, in the order of the
// fields of Options.
var processingParameters = []parameter{
	{
		name: "clickHouseDeadLetterTable", group: "Dead letter", kind: kindString,
		field: func(o *Options) any { return &o.ClickHouseDeadLetterTable },
		usage: "ClickHouse `table` in clickHouseDatabase for messages that cannot be inserted. Set it, deadLetterTopic, or both.",
		rule:  notBlank("a table name", plainName("must be a bare table name without a dot: the dead-letter table is in clickHouseDatabase")),
		label: "ClickHouse dead-letter table",
		help: "Table in clickHouseDatabase for the messages that cannot be inserted, with the columns raw_message String, error_message String, " +
			"stack_trace String, failed_at DateTime. Set this, deadLetterTopic, or both. Unset by default. For example, events_dead_letter.",
		regex: "^( *[^.` ][^.`]*)?$",
		doc: "Table in `clickHouseDatabase` for dead letters, with the columns `raw_message String, error_message String, stack_trace String, " +
			"failed_at DateTime`, and optionally `message_id`, `attributes` and `ordering_key` (String), which `replay` gives back " +
			"([deploy.md](deploy.md#the-dead-letter-table) has the `CREATE TABLE`). Checked at launch and by each worker. A table that stores " +
			"nothing of what it takes (the engine `Null` that no materialized view reads) is refused at launch as the only dead-letter " +
			"destination and warned of beside `deadLetterTopic`; each worker checks it again before each INSERT (one query of " +
			"`system.tables`), and holds the dead letters back while it stores nothing and no topic is set.",
	},
	{
		name: "deadLetterTopic", group: "Dead letter", kind: kindString,
		field: func(o *Options) any { return &o.DeadLetterTopic },
		usage: "Pub/Sub `topic` for messages that cannot be inserted, as projects/<project>/topics/<name>. " +
			"Set it, clickHouseDeadLetterTable, or both.",
		rule:  notBlank("a topic", pubsubName(psclient.ParseTopic)),
		label: "Pub/Sub dead-letter topic",
		help: "Pub/Sub topic for the messages that cannot be inserted, in the form projects/<project>/topics/<name>. Each is published with the " +
			"original message bytes as its data, the original attributes and ordering key, and the attributes errorMessage and failedAt. Set this, " +
			"clickHouseDeadLetterTable, or both. Unset by default. For example, projects/my-project/topics/events-dead-letter.",
		typ:   "PUBSUB_TOPIC",
		regex: `^(projects/([1-9][0-9]{0,18}|([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+:)?[a-z][-a-z0-9]{4,28}[a-z0-9])/topics/([a-fh-zA-Z][-a-zA-Z0-9_.~+%]{2,254}|g([-a-np-zA-Z0-9_.~+%][-a-zA-Z0-9_.~+%]{1,253}|o([-a-np-zA-Z0-9_.~+%][-a-zA-Z0-9_.~+%]{0,252}|o([-a-fh-zA-Z0-9_.~+%][-a-zA-Z0-9_.~+%]{0,251})?))))?$`,
		doc: "Pub/Sub topic for dead letters, `projects/<project>/topics/<name>`. Each dead letter is published with the original message bytes as " +
			"data, the original attributes and ordering key ([delivery.md](delivery.md#ordering-keys-in-the-dead-letter-topic)), and the attributes " +
			"`errorMessage` and `failedAt`. Checked at launch and by each worker (it must exist); the launch refuses the topic of " +
			"`inputSubscription` (every dead letter would come back as input, without end), when the job may read the subscription " +
			"(`pubsub.subscriptions.get`) and it has no filter; with a filter it warns: the filter must keep the dead letters out " +
			"(`NOT attributes:errorMessage`). A topic with a schema gets a warning too, when the job may read the topic (`pubsub.topics.get`): " +
			"Pub/Sub refuses a message whose data does not conform to it, and a dead letter's data is the message as it came in, so such a dead " +
			"letter is refused at every attempt and its message comes back unacknowledged; give a topic without a schema, unless the input " +
			"topic validates against the same one. Pub/Sub delivers a message only to the subscriptions that exist when it is published, so " +
			"a topic without a subscription (and without message retention of its own) keeps no dead letter: the launch refuses it as the only " +
			"dead-letter destination, and beside `clickHouseDeadLetterTable` warns of it, when the job may read the topic and list its subscriptions " +
			"(`GetTopic`, `pubsub.topics.get`, and `ListTopicSubscriptions`; `roles/pubsub.publisher` allows neither: the check then passes). " +
			"Each worker asks again before a publish, at most every 10 s once it found a subscription (`ListTopicSubscriptions`), since a subscription deleted, or the topic deleted and " +
			"created again (which detaches the old subscriptions), while the job runs leaves a topic that keeps nothing: as the only destination " +
			"the batch of dead letters then fails, its messages unacknowledged, until the topic has a subscription; beside the table it warns once.",
	},
	{
		name: "windowSeconds", group: "Batching", kind: kindOptionalInt,
		field: func(o *Options) any { return &o.WindowSeconds },
		usage: "Length of the windows that group messages into inserts, in `seconds`; positive.",
		rule:  atLeast(1, "must be a positive number of seconds (leave it empty for unset)"),
		most:  yearOfSeconds,
		label: "Window length (seconds)",
		help: "Length of the windows that group rows into INSERTs, in seconds; positive. Set alone: fixed windows, each window's rows are inserted " +
			"when it closes. Set with batchRowCount: an INSERT at batchRowCount rows or windowSeconds after the first row of the batch, whichever " +
			"comes first. Neither set: the same with 30 seconds and 1000 rows. Unset by default. For example, 10.",
		regex: `^([1-9][0-9]*)?$`,
		doc:   "Window length, or the longest a batch waits, in seconds; positive.",
	},
	{
		name: "batchRowCount", group: "Batching", kind: kindOptionalInt,
		field: func(o *Options) any { return &o.BatchRowCount },
		usage: "Largest number of rows in one insert, in `rows`; positive.",
		rule:  atLeast(1, "must be a positive number of rows (leave it empty for unset)"),
		most:  int32Rows,
		label: "Batch size (rows)",
		help: "Largest number of rows in one INSERT; positive. Set alone: an INSERT every batchRowCount rows, in the global window. Set with " +
			"windowSeconds: an INSERT at batchRowCount rows or windowSeconds after the first row of the batch, whichever comes first. Neither set: " +
			"the same with 30 seconds and 1000 rows. Unset by default. For example, 5000.",
		regex: `^([1-9][0-9]*)?$`,
		doc:   "Rows per batch; positive. Also the largest number of rows in one INSERT.",
	},
	{
		name: "batchByteSize", group: "Batching", kind: kindInt, def: 16 << 20,
		field: func(o *Options) any { return &o.BatchByteSize },
		usage: "Largest size of one batch, in `bytes` of its messages (payload, ids and attributes; with a JavaScript UDF its input too); " +
			"positive. A batch is inserted once the next row would take it above this size; a larger message is a batch alone. In the " +
			"fixed-window mode it bounds each INSERT.",
		rule: atLeast(1, "must be a positive number of bytes (default %d)"),
		// A batch is one element of the pipeline, which Beam's Fn API carries in a protobuf
		// message, and protobuf messages hold less than 2 GiB.
		most:  bound{math.MaxInt32, "bytes (2 GiB less a byte)"},
		label: "Batch size (bytes)",
		help: "Largest size of one batch, in bytes of its messages (payload, ids and attributes; with a JavaScript UDF its input too); " +
			"positive. With batchRowCount set, or neither batchRowCount nor windowSeconds, a batch is inserted once it holds batchRowCount " +
			"rows, or once the next row would take it above this size, whichever comes first; a message larger than this is inserted alone. " +
			"It bounds the memory a batch takes on the worker when messages are large. With windowSeconds alone a window's rows are one " +
			"batch, inserted in INSERTs of at most this size.",
		regex: `^([1-9][0-9]*)?$`,
		doc: "Largest size of one batch, in bytes of its messages: each message's payload with its message id, attributes and ordering key, " +
			"and about 10 bytes more; with a JavaScript UDF, the function's output and its input (the payload as published), so about twice " +
			"the payload; on the local runner also the message's ack id (with Pub/Sub itself about 200 bytes; on Dataflow none). In the count " +
			"and combined modes a batch ends before the row that would take it above this size, or at the row that reaches it exactly, or at " +
			"`batchRowCount` rows, whichever comes first; a message larger than this is a batch, and an INSERT, alone. The default, 16 MiB, " +
			"leaves batches of messages of a few kilobytes to `batchRowCount` and bounds the memory a batch takes on the worker when messages " +
			"are large ([operations.md](operations.md#large-messages)). To batch by rows alone, as before this parameter, set it above " +
			"`batchRowCount` times the largest message. In the fixed-window mode a window's rows are one batch whatever their size, and the " +
			"write stage cuts its INSERTs at this many bytes of converted rows (RowBinary; a row larger is an INSERT alone), which bounds each " +
			"INSERT but not the memory of the window's batch. Batches of dead letters are bounded the same way (their payload, error " +
			"message, stack trace, ids and attributes); on the local runner they are cut from groups that what the source holds " +
			"unacknowledged bounds (in the count mode, `batchRowCount` records). The dead-letter table's INSERTs are cut at this size too.",
	},
	{
		name: "maxInsertBlockSize", group: "Insert tuning", kind: kindInt, def: 1_000_000,
		field: func(o *Options) any { return &o.MaxInsertBlockSize },
		usage: "ClickHouse setting max_insert_block_size for the inserts, in `rows`; positive.",
		rule:  atLeast(1, "must be a positive number of rows (default %d)"),
		most:  int32Rows, // batchRowCount's: ClickHouse reads a UInt64, but a block above the largest batch changes nothing
		label: "Largest INSERT (rows)",
		help:  "ClickHouse setting max_insert_block_size for the INSERTs, in rows; no INSERT holds more rows than this; positive.",
		regex: `^([1-9][0-9]*)?$`,
		doc: "ClickHouse setting `max_insert_block_size`, in rows, sent with each INSERT; the pipeline also never sends more rows than this in one " +
			"INSERT, into a table or the dead-letter table. Positive.",
	},
	{
		name: "maxRetries", group: "Insert tuning", kind: kindInt, def: 5,
		field: func(o *Options) any { return &o.MaxRetries },
		usage: "How many times a failed ClickHouse insert is retried, a `count`; 0 = no retry.",
		rule:  atLeast(0, "must be 0 or more retries (0 = no retry; default %d)"),
		// While an INSERT is retried its messages stay unacknowledged, and Pub/Sub keeps a
		// message at most 7 days by default: 10,000 retries at the default longest wait (60 s)
		// are about a week.
		most:  bound{10_000, "retries"},
		label: "INSERT retries",
		help: "How many times an INSERT that failed for a transient reason (network, server unavailable) is retried before the bundle fails and the " +
			"runner processes it again; 0 means no retry.",
		regex: `^(0|[1-9][0-9]*)?$`,
		doc: "How many times an INSERT that failed for a transient reason is retried; 0 means no retry. It and the two waits below bound " +
			"the INSERTs of rows and of dead letters; a worker's start-up against ClickHouse (connecting, reading the target and the " +
			"dead-letter table) retries on its own, for at most about a minute and a half (12 retries after the first attempt, up to 10 s apart), whatever they say.",
	},
	{
		name: "retryInitialBackoffMillis", group: "Insert tuning", kind: kindInt, def: 5_000,
		field: func(o *Options) any { return &o.RetryInitialBackoffMillis },
		usage: "Wait before the first retry of a failed INSERT, in `milliseconds`; doubled at each retry up to retryMaxBackoffMillis, with jitter; positive.",
		rule:  atLeast(1, "must be a positive number of milliseconds (default %d)"),
		most:  yearOfMillis,
		label: "First retry wait (milliseconds)",
		help: "Wait before the first retry of a failed INSERT, in milliseconds; doubled at each further retry up to retryMaxBackoffMillis, with " +
			"jitter; positive.",
		regex: `^([1-9][0-9]*)?$`,
		doc:   "Wait before the first retry, in milliseconds; positive.",
	},
	{
		name: "retryMaxBackoffMillis", group: "Insert tuning", kind: kindInt, def: 60_000,
		field: func(o *Options) any { return &o.RetryMaxBackoffMillis },
		usage: "Longest wait between two attempts of an INSERT, in `milliseconds`; at least retryInitialBackoffMillis.",
		rule: func(p parameter, o Options) string {
			if rule := atLeast(1, "must be a positive number of milliseconds (default %d)")(p, o); rule != "" {
				return rule
			}
			if o.RetryInitialBackoffMillis > yearOfMillis.most {
				return "" // retryInitialBackoffMillis's own problem, reported for it
			}
			if p.number(o) < o.RetryInitialBackoffMillis {
				return fmt.Sprintf("must be at least retryInitialBackoffMillis (%d) milliseconds (default %d)", o.RetryInitialBackoffMillis, p.def)
			}
			return ""
		},
		most:  yearOfMillis,
		label: "Longest retry wait (milliseconds)",
		help:  "Longest wait between two attempts of an INSERT, in milliseconds; at least retryInitialBackoffMillis.",
		regex: `^([1-9][0-9]*)?$`,
		doc:   "Longest wait between two attempts, in milliseconds; at least `retryInitialBackoffMillis`.",
	},
	{
		name: "insertDeduplicate", group: "Insert tuning", kind: kindBool, def: true,
		field: func(o *Options) any { return &o.InsertDeduplicate },
		usage: "ClickHouse setting insert_deduplicate: drop a retried insert of the same block into a Replicated*MergeTree table. " +
			"true or false; give --insertDeduplicate=false to turn it off.",
		label: "Deduplicate retried INSERTs",
		help: "ClickHouse setting insert_deduplicate (and deduplicate_insert, enable or disable, from ClickHouse 26.2, where it overrides " +
			"insert_deduplicate): a retried INSERT of the same rows is dropped as a duplicate by Replicated*MergeTree tables (and " +
			"by MergeTree tables with non_replicated_deduplication_window set). Each INSERT also carries an insert_deduplication_token derived from " +
			"its messages, on servers that know that setting.",
		regex: `^(true|false|True|False|TRUE|FALSE|t|f|T|F|1|0)?$`,
		doc: "ClickHouse setting `insert_deduplicate`: an INSERT of a block already inserted is dropped, by `Replicated*MergeTree` tables and by " +
			"`MergeTree` tables with `non_replicated_deduplication_window` set. Also sent as `deduplicate_insert` (`enable` or `disable`) to " +
			"ClickHouse 26.2 and newer, where that setting overrides `insert_deduplicate` and is `enable` by default, so that `false` turns " +
			"deduplication off there too.",
	},
	{
		name: "insertQuorum", group: "Insert tuning", kind: kindOptionalInt,
		field: func(o *Options) any { return &o.InsertQuorum },
		usage: "ClickHouse setting insert_quorum: number of `replicas` that must confirm each insert; 0 disables the quorum.",
		unset: "the server's setting applies",
		rule:  atLeast(0, "must be 0 or more replicas (0 disables the quorum; leave it empty for the server's setting)"),
		// A quorum above the table's replicas fails every INSERT, and no ClickHouse shard has a
		// thousand replicas.
		most:  bound{1000, "replicas"},
		label: "Insert quorum (replicas)",
		help: "ClickHouse setting insert_quorum: how many replicas must confirm each INSERT into a replicated table; 0 disables the quorum. Unset by " +
			"default, which leaves the server's setting. For example, 2.",
		regex: `^(0|[1-9][0-9]*)?$`,
		doc: "ClickHouse setting `insert_quorum`: how many replicas must confirm each INSERT into a replicated table; 0 disables the quorum. Unset: " +
			"the setting is not sent, and the server's own applies.",
	},
	{
		name: "insertDistributedSync", group: "Insert tuning", kind: kindBool, def: true,
		field: func(o *Options) any { return &o.InsertDistributedSync },
		usage: "ClickHouse setting insert_distributed_sync (distributed_foreground_insert): an insert into a Distributed table " +
			"returns once the data is on the shards. true or false; give --insertDistributedSync=false to turn it off.",
		label: "Synchronous INSERTs into Distributed tables",
		help: "ClickHouse setting insert_distributed_sync (distributed_foreground_insert in newer releases): an INSERT into a Distributed table " +
			"returns only once the data is stored on the shards.",
		regex: `^(true|false|True|False|TRUE|FALSE|t|f|T|F|1|0)?$`,
		doc: "ClickHouse setting `insert_distributed_sync` (`distributed_foreground_insert` in newer releases, which keep the old name as an alias): " +
			"an INSERT into a `Distributed` table returns only once the data is stored on the shards, so that a success means the rows are written.",
	},
	{
		name: "numShards", group: "Batching", kind: kindInt, def: 0, // auto: see [Options.Shards]
		field: func(o *Options) any { return &o.NumShards },
		usage: "Number of parallel INSERT streams (`shards`) the rows are spread over before batching; " +
			"0 = auto: 1 on the local runner, on Dataflow max_num_workers clamped to 4..16.",
		rule:  atLeast(0, "must be a positive number of shards, or %d (the default) to choose by runner"),
		most:  bound{maxShards, "shards"},
		label: "Parallel INSERT streams",
		help: "Number of parallel INSERT streams: rows are spread over this many keys before they are batched, so up to this many batches fill and are " +
			"inserted at the same time, by as many workers. 0 chooses: max_num_workers clamped to 4..16 on Dataflow, 1 on the local runner. More " +
			"shards make more, smaller INSERTs (batchRowCount and windowSeconds apply to each shard).",
		regex: `^(0|[1-9][0-9]*)?$`,
		note:  "auto",
		doc: "Number of parallel INSERT streams. Before batching, each worker spreads the rows round robin over this many keys; each key forms its " +
			"batches independently, so up to `numShards` batches fill and are inserted at the same time, on different workers when there are " +
			"several. 0 chooses by runner: 1 on the local runner (one process does every INSERT anyway), and on Dataflow the job's `max_num_workers` " +
			"(`--max-workers`) clamped to 4..16, 4 when it is not given. The bound, 1024 (64 times the largest automatic choice), keeps " +
			"the cost of the shards in hand: each is a batcher with its own state on every worker and an INSERT stream of its own, and on the " +
			"local runner each heartbeat of the source (every 200 ms) goes to every shard (200,000 shards stalled a run).",
	},
	{
		name: "shuffleCompression", group: "Batching", kind: kindString,
		field: func(o *Options) any { return &o.ShuffleCompression },
		usage: "How the rows are compressed through the batch stage's GroupByKey and state (on Dataflow, what Streaming Engine carries and, " +
			"billed by data processed, bills): `minlz`, s2 (what releases before minlz wrote) or zstd (fewer bytes, for more CPU).",
		unset: "minlz",
		rule: func(p parameter, o Options) string {
			if _, err := flow.ParseCompression(p.str(o)); err != nil {
				return "must be minlz (fast, the default), s2 (as fast, more bytes; what releases before minlz wrote) or zstd (fewer bytes, more CPU)"
			}
			return ""
		},
		label: "Compression through the shuffle",
		help: "How the rows are compressed on their way through the batching step (Streaming Engine's shuffle and state, which a job billed by " +
			"data processed pays for by the byte): minlz, s2 or zstd. minlz carries about 0.29 of the payload bytes on JSON events of 1 KB; s2, " +
			"the default of earlier releases, about 0.32 for about as much CPU; zstd about 0.21, for more worker CPU (about 7% more than s2). " +
			"Unset by default: minlz.",
		typ: "ENUM",
		enum: []EnumOption{
			{Value: "minlz", Label: "MinLZ", Description: "Fast, the default."},
			{Value: "s2", Label: "S2", Description: "As fast, a tenth more bytes; what releases before minlz wrote."},
			{Value: "zstd", Label: "Zstandard", Description: "About a quarter fewer bytes through the shuffle, for more CPU."},
		},
		regex: `^(minlz|s2|zstd)?$`,
		note:  "minlz",
		doc: "How the rows are compressed through the batch stage's `GroupByKey` and state, which on Dataflow Streaming Engine carries and keeps " +
			"(and, for a job billed by data processed, bills by the byte): `minlz` (the default since 2026-12-05; about 0.29 of the payload " +
			"bytes on the demo's events, 0.19 on the Wikipedia edits, at 1,000 rows a group), `s2` (the default before; about 0.32 and 0.20, " +
			"for about as much CPU) or `zstd` (about 0.21 and 0.15), for about 7% more CPU on the workers than s2 (medians; 6 to 13% in " +
			"single rounds). [operations.md](operations.md#cost-per-message) weighs them by Dataflow's prices. A job may be updated from one " +
			"to another: a worker reads the rows of each whatever its own. A release reads only the formats it knows (those before this " +
			"parameter only s2, those before minlz s2 and zstd), and a job's state may hold groups of every compression it has run with, so " +
			"go back to an older release by draining the job and launching the older one as a new job, not by an update.",
	},
	{
		name: "stopAfterIdle", kind: kindOptionalInt, // local runner only: no template parameter
		field: func(o *Options) any { return &o.StopAfterIdle },
		usage: "Local runner only: end the run once no message has arrived for this many `seconds` and everything pulled has been written.",
		unset: "the run goes on until stopped",
		rule:  atLeast(1, "must be a positive number of seconds (leave it empty to run until stopped)"),
		most:  yearOfSeconds,
		doc: "For local runs on Beam's prism runner: it ends the run once no message has arrived for that many seconds and the messages " +
			"read are written and acknowledged (with fixed windows, once their window has closed: up to `windowSeconds` and a second more, the watermark trailing the clock by a second; with " +
			"`batchRowCount` and `windowSeconds` both, a last batch short of `batchRowCount` rows waits for its time bound, up to " +
			"`windowSeconds` after its first row; the log says `idle, waiting for outstanding messages` meanwhile). On " +
			"Dataflow the source is Dataflow's own Pub/Sub read and the flag has no effect (drain the job instead), so the template does not offer " +
			"it and `flex-template/run.sh` refuses it.",
	},
	{
		name: "progressSeconds", kind: kindInt, def: 5, // local runner only: no template parameter
		field: func(o *Options) any { return &o.ProgressSeconds },
		usage: "Local runner only: how often a progress line is logged (messages read, rows inserted, dead letters, messages not yet acknowledged " +
			"and the age of the oldest), in `seconds`; 0 = never.",
		rule: atLeast(0, "must be 0 (never) or more seconds (default %d)"),
		most: yearOfSeconds,
		doc: "For local runs too: every that many seconds the run logs one line, `msg=\"progress: 1200 messages read, 1176 rows " +
			"inserted, 24 dead letters, 0 unacknowledged\"` (with `, oldest pulled 3.2s ago` while some are unacknowledged, and the messages the " +
			"JavaScript UDF dropped when there are any); rows inserted and dead letters count the messages whose row or dead letter is stored (and " +
			"so acknowledged). `--progressSeconds=0` turns it off. On Dataflow it does nothing: the job's console shows its progress.",
	},
	{
		name: "schemaRefreshSeconds", group: "Target", kind: kindInt, def: 60,
		field: func(o *Options) any { return &o.SchemaRefreshSeconds },
		usage: "How often each worker reads the table's schema again, in `seconds`, to pick up added columns; 0 = never.",
		rule:  atLeast(0, "must be 0 (never) or more seconds (default %d)"),
		most:  yearOfSeconds,
		label: "Schema refresh interval (seconds)",
		help: "How often each worker reads the target table's columns again, in seconds, so that a column added while the job runs is filled without a " +
			"restart (the dead-letter table's too); 0 means never (a dropped or changed column is still noticed at the next INSERT that fails because of it).",
		regex: `^(0|[1-9][0-9]*)?$`,
		doc: "How often each worker reads the table's columns again, in seconds; 0 means never. A column added while the job runs is filled from then " +
			"on, without a restart; until a worker's next refresh (at most this many seconds) the new column's field is ignored and the column gets " +
			"its DEFAULT. A DEFAULT changed while the job runs applies at once: the INSERT leaves out the column of a field a message lacks, and " +
			"the server computes the column's DEFAULT as it is now. A DEFAULT added to a column that had none is like a column added: until the next " +
			"refresh a message without the field gets what the old schema gave it (NULL for a Nullable column, `[]` for an Array, else it is a dead " +
			"letter), since the INSERT names the column and the server's DEFAULT then does not apply. A DEFAULT removed (on 18.16 by `MODIFY COLUMN " +
			"c T` without one) leaves such a message, until the next refresh, the value the server gives a column an INSERT leaves out (`0`, `''`), " +
			"where the new schema makes it a dead letter. A dropped or changed column is noticed anyway at the next INSERT that fails because of it: the write stage reads the " +
			"schema again, converts the batch's messages again against the new columns, and retries, and the parse stage of that worker reads it again " +
			"at its next message (but with 0, which never reads it again, unless `addNewColumns` is set: a column it added and someone dropped since is then added again), so that a column widened while the job runs (`UInt8` made `UInt16`) stops dead-lettering the values it now takes. " +
			"Until then, and on a worker whose write stage has not met the change, a message is judged by the columns as the stage last read them. The dead-letter table is read again at the " +
			"same interval, before an INSERT of dead letters: an optional column (`message_id`, `attributes`, `ordering_key`) added while the job " +
			"runs is filled from then on.",
	},
	{
		name: "metadataColumns", group: "Target", kind: kindString,
		field: func(o *Options) any { return &o.MetadataColumns },
		usage: "Columns that take the message's metadata instead of a payload field: comma-separated `KEY=column` pairs, KEY one of " +
			"message_id, publish_time, ordering_key, attributes and attribute.NAME (message_id=msg_id,publish_time=published_at,attribute.source=src).",
		rule:  func(p parameter, o Options) string { return metadataRule(p.str(o)) },
		label: "Columns of the message's metadata",
		help: "Columns that take the Pub/Sub message's metadata instead of a field of the payload: comma-separated KEY=column pairs, KEY one of " +
			"message_id, publish_time, ordering_key, attributes (all attributes) and attribute.NAME (one attribute). Each value converts as a JSON " +
			"value would into the column's type: publish_time into DateTime, DateTime64 (milliseconds kept where the precision holds them), Int64 or " +
			"UInt64 (Unix milliseconds) or String (RFC 3339); attributes into Map(String, String) or String (a JSON object); message_id (Pub/Sub's " +
			"ids are decimal numbers of up to 19 digits) into String, FixedString(N) with N >= 19, UInt64, Int128, UInt128, Int256, UInt256 or " +
			"Decimal(P, S) with P - S >= 19, not Int64 (at most 9223372036854775807); ordering_key and attribute.NAME as JSON strings (so \"42\" fills " +
			"a UInt32). A missing attribute is a missing field (the column's DEFAULT, NULL, or a dead letter); a message without an ordering key " +
			"gives the column's DEFAULT, NULL, or \"\" (a dead letter only where the column takes no \"\"). A column " +
			"named here is not read from the payload. Each pair is checked against the table at launch. Unset by default. For example, " +
			"message_id=msg_id,publish_time=published_at,attribute.source=src.",
		regex: `^((message_id|publish_time|ordering_key|attributes|attribute\.[^,=]+)=[^,]+(,(message_id|publish_time|ordering_key|attributes|attribute\.[^,=]+)=[^,]+)*)?$`,
		doc: "Columns that take the Pub/Sub message's metadata instead of a field of the payload: comma-separated `KEY=column` pairs, for example " +
			"`message_id=msg_id,publish_time=published_at,attribute.source=src`. KEY is `message_id`, `publish_time`, `ordering_key`, `attributes` " +
			"(every attribute) or `attribute.NAME` (one attribute; the name holds no `,` or `=`). Each value converts as the JSON value it is " +
			"rendered as would into its column's type ([conversion.md](conversion.md#message-metadata-in-columns) has the table): `publish_time` " +
			"into `DateTime`, `DateTime64` (milliseconds kept where the precision holds them), `Int64`/`UInt64` (Unix milliseconds) or `String` (RFC " +
			"3339 with milliseconds); `attributes` into `Map(String, String)` or `String` (a JSON object); `message_id` into a type that holds every " +
			"decimal number of up to 19 digits, which Pub/Sub's ids are: `String`, `FixedString(N)` with N ≥ 19, `UInt64`, `Int128`, `UInt128`, " +
			"`Int256`, `UInt256` or `Decimal(P, S)` with P − S ≥ 19 (not `Int64`, whose largest value is 9223372036854775807); `ordering_key` and " +
			"`attribute.NAME` as JSON strings (`\"42\"` fills a `UInt32`). A missing attribute is a missing field: the column's `DEFAULT`, NULL for a " +
			"Nullable column, else a dead letter. A message without an ordering key (Pub/Sub's ordering key is then `\"\"`) gives the column's " +
			"`DEFAULT`, NULL for a Nullable column, else `\"\"` (`''` in a `String`); only a column that takes no `\"\"` (a number, a date, `UUID`) " +
			"makes it a dead letter. Nullable and LowCardinality wrappers take their type's values. A column named here is not read from the payload " +
			"(the launch logs a warning naming the column; with `unknownFieldsColumn` the payload's field goes there). Malformed pairs, an unknown " +
			"key and a column named twice are refused before anything starts; a column the table lacks, one never written (`MATERIALIZED`, `ALIAS`) " +
			"or a type that cannot take the value stops the launch with a sentence naming `metadataColumns`, the pair and the rule, as does each " +
			"worker; a column gone while the job runs makes the table's INSERTs wait for it, retried (`maxRetries`, then the bundle fails) " +
			"([conversion.md](conversion.md#message-metadata-in-columns)).",
	},
	{
		name: "unknownFieldsColumn", group: "Target", kind: kindString,
		field: func(o *Options) any { return &o.UnknownFieldsColumn },
		usage: "A String or Map(String, String) `column` that takes, as one JSON object, the payload's fields that give the row no value " +
			"(no such column), keys and values as written.",
		rule: notBlank("a column name", func(p parameter, o Options) string {
			v := p.str(o)
			if strings.TrimSpace(v) != v {
				return "must not start or end with spaces"
			}
			m, _ := convert.ParseMetadataColumns(o.MetadataColumns)
			if i := slices.IndexFunc(m, func(m convert.MetadataColumn) bool { return m.Column == v }); i >= 0 {
				return fmt.Sprintf("is also named in metadataColumns (%s); a column takes one value", m[i])
			}
			return ""
		}),
		label: "Column of the unknown fields",
		help: "A column that takes the fields of each message that give the row no value (no column of that name), so that no field is lost when the " +
			"payload has fields the table does not: a String column gets one JSON object of those fields, keys and values byte for byte as in the " +
			"message, in their order; a Map(String, String) column gets one entry per field. A message without such fields stores {} or an empty " +
			"map. After adding a column, its values can be backfilled from this one. Not also a column of metadataColumns. Unset by default. For " +
			"example, unknown_fields.",
		regex: `^([^ ].*[^ ]|[^ ])?$`,
		doc: "A column that takes every top-level field of a message that gives the row no value (a name that is no column, the name of a " +
			"`MATERIALIZED`/`ALIAS` column, or of a column of `metadataColumns`), so that no field is lost when the payload has fields the table " +
			"does not (yet) have. A `String` (or `Nullable(String)`, `LowCardinality(String)`) column gets one JSON object of those fields in their " +
			"order, each key and value byte for byte as in the message (`{\"k1\":<value>,\"k2\":<value>}`); a `Map(String, String)` column gets one " +
			"entry per field, string values decoded and other values as their JSON text. A message without such fields stores `{}` or an empty map. " +
			"Not also a column of `metadataColumns`. With `schemaRefreshSeconds`, a column added later fills from then on and its earlier values can " +
			"be backfilled from this one ([conversion.md](conversion.md#no-field-lost-unknownfieldscolumn)). Checked at launch like " +
			"`metadataColumns`.",
	},
	{
		name: "routeBy", group: "Target", kind: kindString,
		field: func(o *Options) any { return &o.RouteBy },
		usage: "Where each message's table is named: `attribute:NAME` (a Pub/Sub attribute) or field:NAME (a top-level field of the payload, " +
			"a string or a number); the value is looked up in routeTables.",
		unset: "every message goes to clickHouseTable",
		rule: notBlank("attribute:<name> or field:<name>", func(p parameter, o Options) string {
			if _, err := route.ParseBy(p.str(o)); err != nil {
				return err.Error()
			}
			if o.RouteTables == "" {
				return "is set, but routeTables is not: give the value=table pairs, or unset both"
			}
			return ""
		}),
		label: "Route by",
		help: "Routes each message to a table by a value it carries: attribute:NAME takes the Pub/Sub attribute NAME, field:NAME the top-level " +
			"field NAME of the payload (after the JavaScript UDF, when there is one), a string or a number as written. The value is looked up in " +
			"routeTables; a value not listed goes to clickHouseTable, or to the dead letter with routeUnlisted=deadLetter. A message without the " +
			"attribute or field is a dead letter. Set it together with routeTables. Unset by default: every message goes to clickHouseTable. " +
			"For example, attribute:event_type.",
		regex: `^((attribute|field):([^ ]|[^ ].*[^ ]))?$`,
		doc: "Routes each message to a table of `clickHouseDatabase` by a value it carries: `attribute:NAME` takes the Pub/Sub attribute " +
			"`NAME`, `field:NAME` the top-level field `NAME` of the payload (after the JavaScript UDF, which can so set it; `NAME` is compared byte for " +
			"byte, so spaces around it are refused), a JSON string (its " +
			"text, escapes decoded) or a number (as written: `7` and `7.0` are different values). The value is looked up in `routeTables`; a " +
			"value not listed goes to `clickHouseTable`, or is a dead letter with `routeUnlisted=deadLetter`. A message without the attribute or " +
			"field (or with `null`, a boolean, an array or an object there) is a dead letter whose error names `routeBy`, the attribute or field " +
			"and the value. Set together with `routeTables`; [conversion.md](conversion.md#routing-to-several-tables) has an example.",
	},
	{
		name: "routeTables", group: "Target", kind: kindString,
		field: func(o *Options) any { return &o.RouteTables },
		usage: "The table of each routing value: comma-separated `VALUE=table` pairs (click=clicks,order=orders), tables of clickHouseDatabase. " +
			"Set it and routeBy, or neither.",
		rule: notBlank("value=table pairs", func(p parameter, o Options) string {
			entries, err := route.ParseTables(p.str(o), func(t string) string {
				return tableRule(t, "must be a bare table name without a dot: the routed tables are in clickHouseDatabase")
			})
			switch {
			case err != nil:
				return err.Error()
			case o.RouteBy == "":
				return "is set, but routeBy is not: say where each message's value is (attribute:NAME or field:NAME), or unset both"
			}
			for _, e := range entries {
				if e.Table == o.ClickHouseDeadLetterTable {
					return fmt.Sprintf("the pair %q names clickHouseDeadLetterTable, which holds dead letters, not rows", e)
				}
			}
			return ""
		}),
		label: "Routed tables",
		help: "The table of each value of routeBy: comma-separated VALUE=table pairs, tables of clickHouseDatabase; several values may share a " +
			"table. Each table is checked at launch as clickHouseTable is, and has its own schema, batches and retries. Set it together with " +
			"routeBy. Unset by default. For example, click=clicks,order=orders.",
		regex: "^([^,=]+=[^,=.`]+(,[^,=]+=[^,=.`]+)*)?$",
		doc: "The table of each value of `routeBy`: comma-separated `VALUE=table` pairs, such as `click=clicks,order=orders`; spaces around a " +
			"value or table are ignored, several values may share a table, a value is listed once and holds no `,` or `=` (a message whose value has one is unlisted: see `routeUnlisted`). Every table is in `clickHouseDatabase` and " +
			"is checked at launch as `clickHouseTable` is (each failure names its pair). Each table has its own schema (refreshed on its own, " +
			"`schemaRefreshSeconds`), its own conversion with `metadataColumns` and `unknownFieldsColumn` (which each table must then have), " +
			"and its own batches: `batchRowCount`, `windowSeconds` and `maxInsertBlockSize` hold per table, and one table's outage or rejected " +
			"rows never hold up another's (on the local runner, while fewer than 8 tables are down at once: " +
			"[conversion.md](conversion.md#routing-to-several-tables); with `addNewColumns`, a message with a new field for a table that is down is a dead letter instead: " +
			"[conversion.md](conversion.md)).",
	},
	{
		name: "routeUnlisted", group: "Target", kind: kindString,
		field: func(o *Options) any { return &o.RouteUnlisted },
		usage: "Where a message goes whose routeBy value routeTables does not list: `clickHouseTable` or deadLetter.",
		rule: func(p parameter, o Options) string {
			switch {
			case p.str(o) != "clickHouseTable" && p.str(o) != "deadLetter":
				return "must be clickHouseTable (unlisted values go to that table) or deadLetter (they are dead letters)"
			case o.RouteBy == "":
				return "is set, but routeBy is not: it says where unlisted routing values go"
			}
			return ""
		},
		label: "Unlisted routing values",
		help:  "Where a message goes whose routeBy value routeTables does not list. Unset by default: clickHouseTable.",
		typ:   "ENUM",
		regex: `^(clickHouseTable|deadLetter)?$`,
		enum: []EnumOption{
			{Value: "clickHouseTable", Label: "clickHouseTable", Description: "Unlisted values go to clickHouseTable."},
			{Value: "deadLetter", Label: "Dead letter", Description: "Unlisted values are dead letters that name the value."},
		},
		note: "clickHouseTable",
		doc: "Where a message goes whose `routeBy` value `routeTables` does not list: `clickHouseTable` (unset: the same), or `deadLetter`, which " +
			"makes it a dead letter whose error names the value; `clickHouseTable` is then written only when a pair names it.",
	},
	{
		name: "addNewColumns", group: "Target", kind: kindBool, def: false,
		field: func(o *Options) any { return &o.AddNewColumns },
		usage: "Schema evolution: a top-level field that no column takes becomes a new column (ALTER TABLE ... ADD COLUMN), of a type " +
			"inferred from its value, and the message is converted against it. true or false.",
		label: "Add a column for each new field",
		help: "Schema evolution: a top-level field of a message that no column of the table takes becomes a new Nullable column (ALTER TABLE ... " +
			"ADD COLUMN), of a type inferred from its value (a whole number Nullable(Int64), or Nullable(UInt64) above Int64's range, another number " +
			"Nullable(Float64), true/false Nullable(Bool) or Nullable(UInt8) before ClickHouse 21.12, a string, array or object, or a number beyond " +
			"Float64's range, Nullable(String)), and the message is converted against the table " +
			"as it then is. A field that addNewColumnsMax, addNewColumnsPattern or addNewColumnsExcluded refuses makes the message a dead letter that " +
			"says why, or goes to unknownFieldsColumn when that is set. The ClickHouse user needs ALTER ADD COLUMN on the table.",
		regex: `^(true|false|True|False|TRUE|FALSE|t|f|T|F|1|0)?$`,
		doc: "Schema evolution: a top-level field of a message that no column of the table takes (no column of that name; a field that names a " +
			"`MATERIALIZED`/`ALIAS` column or a column of `metadataColumns` or `unknownFieldsColumn` is not new) becomes a new column, " +
			"`ALTER TABLE ... ADD COLUMN`, of the type the rule of [conversion.md](conversion.md#inferring-a-table-from-messages) gives its value; " +
			"the message is then converted against the table as it is, so a type another worker chose first wins and the message converts into " +
			"it or is a dead letter by the usual rules. A `null` value adds no column (it names no type). The limits are `addNewColumnsMax`, " +
			"`addNewColumnsPattern` and `addNewColumnsExcluded`: a field they refuse makes the message a dead letter whose error names the " +
			"field, its value and the rule, or, when `unknownFieldsColumn` is set, stays in that column. The user needs `ALTER ADD COLUMN` on " +
			"the table, which the launch checks ([deploy.md](deploy.md#adding-columns-addnewcolumns)), as it refuses a `Distributed` or `Buffer` " +
			"table, whose `ADD COLUMN` leaves the tables it writes to as they are; " +
			"[conversion.md](conversion.md#new-fields-become-new-columns) says the rest.",
	},
	{
		name: "addNewColumnsMax", group: "Target", kind: kindInt, def: 50,
		field: func(o *Options) any { return &o.AddNewColumnsMax },
		usage: "With addNewColumns: the most `columns` one worker adds to one table while it runs; a field beyond them is refused; positive.",
		rule: func(p parameter, o Options) string {
			if rule := atLeast(1, "must be a positive number of columns (default %d)")(p, o); rule != "" {
				return rule
			}
			if p.number(o) == p.def {
				return "" // the default, which the flag cannot tell from unset
			}
			return withAddNewColumns(o, "it bounds how many columns addNewColumns adds")
		},
		// Each column added is an ALTER TABLE, and a file in every wide part of the table:
		// ClickHouse advises against tables of more than some thousands of columns.
		most:  bound{10_000, "columns"},
		label: "Most columns added per worker",
		help: "With addNewColumns: the most columns one worker adds to one table while it runs (each worker counts its own, so a job of N workers " +
			"adds at most N times this many). A new field beyond them is refused: its message is a dead letter naming addNewColumnsMax, or the " +
			"field goes to unknownFieldsColumn when that is set; positive.",
		regex: `^([1-9][0-9]*)?$`,
		doc: "With `addNewColumns`: the most columns one worker adds to one table while it runs, counted by each worker process on its own (a " +
			"job of N workers adds at most N times this many; a restart counts anew). A column another worker added first does not count (but with " +
			"`addNewColumnsOnCluster`, whose `ADD COLUMN IF NOT EXISTS` succeeds either way, one that two workers add at once counts for both). A new " +
			"field beyond the limit is refused: the message is a dead letter whose error names `addNewColumnsMax`, or the field goes to " +
			"`unknownFieldsColumn` when that is set. Positive; a value other than the default without `addNewColumns` is refused.",
	},
	{
		name: "addNewColumnsPattern", group: "Target", kind: kindString,
		field: func(o *Options) any { return &o.AddNewColumnsPattern },
		usage: "With addNewColumns: an RE2 `regex` a field's name must match to become a column (anchor it: ^[a-z_][a-z0-9_]*$).",
		unset: "any name a column may have",
		rule: notBlank("an RE2 regular expression", func(p parameter, o Options) string {
			if _, err := regexp.Compile(p.str(o)); err != nil {
				return "is not an RE2 regular expression: " + err.Error()
			}
			return withAddNewColumns(o, "it says which field names addNewColumns makes columns")
		}),
		label: "Names of new columns (regex)",
		help: "With addNewColumns: a regular expression (RE2) that a field's name must match to become a column; it matches anywhere in the " +
			"name unless anchored with ^ and $. A field that does not match is refused: its message is a dead letter naming the pattern, or the " +
			"field goes to unknownFieldsColumn when that is set. Unset by default: any name a column may have. For example, ^[a-z_][a-z0-9_]*$.",
		regex: `^(.*[^ ].*)?$`,
		doc: "With `addNewColumns`: a regular expression ([RE2](https://github.com/google/re2/wiki/Syntax)) that a field's name must match to " +
			"become a column, as Go's `regexp.MatchString` matches it: anywhere in the name unless anchored (`^[a-z_][a-z0-9_]*$`). A field that " +
			"does not match is refused: the message is a dead letter (`addNewColumnsPattern: field \"Foo\" (value 1) does not match " +
			"^[a-z_]+$; the message is a dead letter`), or the field goes to `unknownFieldsColumn`. Unset: any name a column may have (not " +
			"empty, no NUL, backtick, backslash or parenthesis, no `SETTINGS a=` after a space, which the rule refuses whatever the pattern).",
	},
	{
		name: "addNewColumnsExcluded", group: "Target", kind: kindString,
		field: func(o *Options) any { return &o.AddNewColumnsExcluded },
		usage: "With addNewColumns: comma-separated field `names` that never become columns (debug,trace_id).",
		rule: notBlank("comma-separated field names", func(p parameter, o Options) string {
			if _, err := excludedFields(p.str(o)); err != nil {
				return err.Error()
			}
			return withAddNewColumns(o, "it names the fields that addNewColumns never makes columns")
		}),
		label: "Fields never added",
		help: "With addNewColumns: comma-separated names of fields that never become columns, as written (case-sensitive; no space around the commas). A message " +
			"with such a field is a dead letter naming addNewColumnsExcluded, or the field goes to unknownFieldsColumn when that is set. Unset by " +
			"default. For example, debug,trace_id.",
		regex: `^(([^ ,]|[^ ,][^,]*[^ ,])(,([^ ,]|[^ ,][^,]*[^ ,]))*)?$`,
		doc: "With `addNewColumns`: comma-separated names of fields that never become columns, matched exactly (case-sensitive; a name holds no " +
			"`,`, and one that starts or ends with a space is refused: `debug, trace` would never exclude `trace`). A message with such a field is a dead letter whose error names `addNewColumnsExcluded`, or the field goes to " +
			"`unknownFieldsColumn` when that is set.",
	},
	{
		name: "addNewColumnsOnCluster", group: "Target", kind: kindString,
		field: func(o *Options) any { return &o.AddNewColumnsOnCluster },
		usage: "With addNewColumns: the `cluster` whose every replica gets the new columns (ALTER TABLE ... ON CLUSTER); the INSERTs wait until " +
			"the column is visible.",
		unset: "no ON CLUSTER",
		rule: notBlank("a cluster name", func(p parameter, o Options) string {
			v := p.str(o)
			switch {
			case strings.TrimSpace(v) != v:
				return "must not start or end with spaces"
			case strings.ContainsRune(v, 0):
				return "must not contain a NUL character"
			}
			return withAddNewColumns(o, "it names the cluster on which addNewColumns runs its ALTER TABLE")
		}),
		label: "Cluster of the new columns (ON CLUSTER)",
		help: "With addNewColumns: the name of the cluster (system.clusters) on which each ALTER TABLE ... ADD COLUMN runs, ON CLUSTER, for a " +
			"table that has a replica on each of its hosts; the message waits until the column is in the server's system.columns (up to 30 " +
			"seconds, then the bundle is retried). Unset by default: the ALTER runs on the server the pipeline connects to. For example, " +
			"my_cluster.",
		regex: `^([^ ].*[^ ]|[^ ])?$`,
		doc: "With `addNewColumns`: the cluster (`system.clusters`) on which each `ALTER TABLE ... ADD COLUMN` runs, `ON CLUSTER`, for a " +
			"replicated table. The worker then reads `system.columns` of the server it connects to until the column is there (every 500 ms, up " +
			"to 30 seconds; then the bundle fails and is retried, nothing is dropped), so that its INSERTs name the column only once it is " +
			"visible. Unset: no `ON CLUSTER`. Not tested against a cluster here (the tests run a single server), only the statement's text.",
	},
	{
		name: "javascriptTextTransformGcsPath", group: "JavaScript UDF", kind: kindString,
		field: func(o *Options) any { return &o.JavascriptTextTransformGcsPath },
		usage: "JavaScript `file` of a user-defined function that reshapes each message before it is converted: gs://<bucket>/<object>, " +
			"or a local path for local runs. Set it and javascriptTextTransformFunctionName, or neither.",
		rule: notBlank("a gs://<bucket>/<object> path", func(p parameter, o Options) string {
			v := p.str(o)
			switch {
			case strings.HasPrefix(v, "gs://") && !gcsObject(v):
				return "must be gs://<bucket>/<object>, the path of one file"
			case strings.TrimSpace(v) != v:
				return "must not start or end with spaces"
			}
			return ""
		}),
		label: "Cloud Storage path to the JavaScript UDF source",
		help: "The Cloud Storage path of the .js file that defines a JavaScript user-defined function (UDF) to reshape each message before it is " +
			"converted, as in Google's templates. The function receives the message data as a string (and, as a second argument, whatever " +
			"parameters it declares, an object with messageId, attributes and publishTime) and returns the JSON text to insert, or null, undefined or an empty string to drop " +
			"the message. A message it fails on (it throws, returns another type, or runs longer than 1 second) goes to the dead letter with its " +
			"original data. Set it together with javascriptTextTransformFunctionName. For example, gs://my-bucket/udfs/transform.js.",
		typ:   "JAVASCRIPT_UDF_FILE",
		regex: `^(gs://[^/ ]+/.*[^/ ])?$`,
		doc: "The JavaScript file that defines the function: `gs://<bucket>/<object>`, for example `gs://my-bucket/udfs/transform.js`. On the local " +
			"runner it may also be a path of this machine's file system (`udfs/transform.js`); on Dataflow it must be in Cloud Storage, and the " +
			"launch refuses a local path. One file, no wildcard. The launcher and each worker read it (the workers' service account needs " +
			"`storage.objects.get` on it); a file that cannot be read, is not valid JavaScript, throws in its top-level code or lacks the function " +
			"stops the launch with a sentence naming this parameter or the next.",
	},
	{
		name: "javascriptTextTransformFunctionName", group: "JavaScript UDF", kind: kindString,
		field: func(o *Options) any { return &o.JavascriptTextTransformFunctionName },
		usage: "Name of the JavaScript `function` in javascriptTextTransformGcsPath to call on each message. " +
			"Set it and javascriptTextTransformGcsPath, or neither.",
		rule: func(p parameter, o Options) string {
			if !jsIdentifier(p.str(o)) {
				return "must be the name of a global JavaScript function: letters, digits, _ and $, not starting with a digit"
			}
			return ""
		},
		label: "JavaScript UDF function name",
		help: "The name of the JavaScript function to call, a global function of the file javascriptTextTransformGcsPath. For example, if the file " +
			"defines function transform(payload) { ... }, the name is transform. Set it together with javascriptTextTransformGcsPath.",
		regex: `^([A-Za-z_$][A-Za-z0-9_$]*)?$`,
		doc: "The name of the function to call, a global function of the file (`function transform(payload) {...}`, or `const transform = ...`): " +
			"letters, digits, `_` and `$`, not starting with a digit. One of JavaScript's own (`String`, `eval`, or `constructor`, which every " +
			"object inherits) that the file does not define again stops the launch.",
	},
	{
		name: "javascriptTextTransformReloadIntervalMinutes", group: "JavaScript UDF", kind: kindInt, def: 0,
		field: func(o *Options) any { return &o.JavascriptTextTransformReloadIntervalMinutes },
		usage: "How often each worker reads the UDF's file again, in `minutes`, so that a changed function takes effect without a restart; 0 = never.",
		rule: func(p parameter, o Options) string {
			if rule := atLeast(0, "must be 0 (never) or more minutes (default %d)")(p, o); rule != "" {
				return rule
			}
			if p.number(o) != p.def && o.JavascriptTextTransformGcsPath == "" {
				return "is set, but javascriptTextTransformGcsPath is not: it says how often the UDF's file is read again; " +
					"give the UDF, or leave it 0 (never)"
			}
			return ""
		},
		most:  yearOfMinutes,
		label: "JavaScript UDF reload interval (minutes)",
		help: "How often each worker reads the UDF's file again, in minutes; when the file changed, the new function is used from then on, without " +
			"restarting the job (a new version that does not load is logged and the current function kept). 0 means never. Only with a UDF.",
		regex: `^(0|[1-9][0-9]*)?$`,
		doc: "How often each worker reads the file again, in minutes; 0 means never. When the file changed, the worker uses the new function from the " +
			"first message after it has loaded, without a restart of the job; a new version that does not load (a syntax error, the function missing) is logged " +
			"(`javascript UDF: the file changed but does not load; keeping the current function`) and the current function kept, and that version is not " +
			"tried again until the file changes. A new version is loaded beside the messages, which the current function goes on transforming " +
			"meanwhile (a file whose top-level code runs long holds none of them up; loading gives up after 30 s). Workers reload " +
			"independently, each on its own clock, so for up to this many minutes some messages go through the old function and some through the " +
			"new. A value other than 0 without `javascriptTextTransformGcsPath` is refused.",
	},
}
