// Package pipeline holds the streaming Beam pipeline that reads JSON messages
// from a Pub/Sub subscription and inserts them as rows into ClickHouse,
// launched as a Dataflow Flex Template.
//
// Its template parameters are [Options], with their flags ([RegisterFlags])
// and their checks ([Options.Validate]). A Flex Template passes each template
// parameter to the launcher as a Go flag of the same name, --name=value.
//
// One table, in params.go, describes each parameter once: its name, its group
// in the Flex Template metadata, its usage, its default, whether it is
// required, its field of Options, its kind of value and its rule. The flags
// (flags.go), the defaults, the checks (validate.go) and the printing
// (print.go) are all read from it; [Parameters] lists it.
package pipeline

import "github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"

// Options are the template parameters. Each field is one flag of the same
// name as given in its comment (see [RegisterFlags]); [Defaults] gives the
// defaults and [Options.Validate] checks the values.
//
// Build copies the connection parameters into the stages' chclient.Config,
// which Beam serializes with the DoFns (as JSON) so that it reaches the
// workers; no DoFn holds Options itself. When clickHousePassword names a
// Secret Manager secret version, that name is all the DoFns hold, and each
// worker reads the password in Setup; a password given as text travels with
// the DoFns. Any printing of Options hides a password: String, GoString and
// every fmt verb (Options implements [fmt.Formatter]) show "xxxxx" instead,
// and hide the password in the userinfo and query of clickHouseUrl too.
type Options struct {
	// InputSubscription (flag inputSubscription, required) is the Pub/Sub
	// subscription to read JSON messages from, as
	// projects/<project>/subscriptions/<name>; see [psclient.ParseSubscription].
	InputSubscription string

	// ClickHouseURL (flag clickHouseUrl, required) is the ClickHouse server:
	// http://host:8123 (HTTP interface), https://host:8443 (HTTPS, as on
	// ClickHouse Cloud) or clickhouse://host:9000 (native protocol). It may
	// carry a path, a query and several comma-separated hosts; a password in
	// its userinfo is hidden by String and [Options.RedactedURL].
	ClickHouseURL string

	// ClickHouseDatabase (flag clickHouseDatabase, required) is the database
	// of ClickHouseTable and ClickHouseDeadLetterTable.
	ClickHouseDatabase string

	// ClickHouseTable (flag clickHouseTable, required) is the table that rows
	// are inserted into: a bare table name, without "<database>.".
	ClickHouseTable string

	// ClickHouseUsername (flag clickHouseUsername, required) is the
	// ClickHouse user.
	ClickHouseUsername string

	// ClickHousePassword (flag clickHousePassword) is the password of
	// ClickHouseUsername, or the name of the Secret Manager secret version
	// that holds it, projects/<p>/secrets/<s>/versions/<v|latest> (see
	// package secret). Optional: unset (the empty string) is no password, as
	// for ClickHouse's default user. A password is never shown (see the
	// type's comment); a secret version's name is.
	ClickHousePassword secret.String

	// ClickHouseCaCertificate (flag clickHouseCaCertificate, optional; "" =
	// the system's roots) names the PEM certificate of the authority that
	// signs the server's certificate: a file path, gs://<bucket>/<object> or
	// a Secret Manager secret version. Only for a clickHouseUrl with TLS.
	ClickHouseCaCertificate string

	// ClickHouseClientCertificate and ClickHouseClientKey (flags
	// clickHouseClientCertificate and clickHouseClientKey, optional, both or
	// neither) name the PEM client certificate and private key presented to a
	// server that asks for one (mutual TLS), in the same forms.
	ClickHouseClientCertificate string
	ClickHouseClientKey         string

	// ClickHouseCompression (flag clickHouseCompression, optional; "" = the
	// compress option of ClickHouseURL, or LZ4) is how the blocks sent to
	// ClickHouse are compressed: "lz4", "zstd" or "none".
	ClickHouseCompression string

	// ClickHouseDeadLetterTable (flag clickHouseDeadLetterTable, optional;
	// "" = unset) is the table in ClickHouseDatabase for messages that cannot
	// be inserted into ClickHouseTable. At least one of it and
	// DeadLetterTopic must be set.
	ClickHouseDeadLetterTable string

	// DeadLetterTopic (flag deadLetterTopic, optional; "" = unset) is the
	// Pub/Sub topic for messages that cannot be inserted, as
	// projects/<project>/topics/<name>; see [psclient.ParseTopic]. At least one of it
	// and ClickHouseDeadLetterTable must be set.
	DeadLetterTopic string

	// WindowSeconds (flag windowSeconds, optional; unset by default) is the
	// length of the windows that group messages into inserts, in seconds.
	// When given it must be positive.
	WindowSeconds OptionalInt

	// BatchRowCount (flag batchRowCount, optional; unset by default) is the
	// largest number of rows in one insert, in rows. When given it must be
	// positive.
	BatchRowCount OptionalInt

	// MaxInsertBlockSize (flag maxInsertBlockSize, default 1000000) is the
	// ClickHouse setting max_insert_block_size for the inserts, in rows. It
	// must be positive.
	MaxInsertBlockSize int

	// MaxRetries (flag maxRetries, default 5) is how many times a failed
	// ClickHouse insert is retried, a count; 0 means no retry. It must not be
	// negative.
	MaxRetries int

	// InsertDeduplicate (flag insertDeduplicate, default true) is the
	// ClickHouse setting insert_deduplicate: a retried insert of an identical
	// block is dropped as a duplicate (by Replicated*MergeTree tables, and by
	// MergeTree tables with non_replicated_deduplication_window set).
	InsertDeduplicate bool

	// InsertQuorum (flag insertQuorum, optional; unset by default) is the
	// ClickHouse setting insert_quorum, the number of replicas that must
	// confirm each insert; 0 disables the quorum, and unset leaves the
	// server's setting. When given it must not be negative.
	InsertQuorum OptionalInt

	// InsertDistributedSync (flag insertDistributedSync, default true) is the
	// ClickHouse setting insert_distributed_sync (called
	// distributed_foreground_insert in newer releases, the old name being an
	// alias): an insert into a Distributed table returns only once the data
	// is stored on the shards.
	InsertDistributedSync bool

	// NumShards (flag numShards, default 0 = auto) is the number of parallel INSERT streams: rows
	// are keyed by a shard number in [0, numShards) before they are batched, and each shard's
	// batches are inserted by one worker at a time. 0 chooses by runner ([Options.Shards]): 1 on
	// the local runner, and on Dataflow max_num_workers clamped to [4, 16]. It must not be
	// negative.
	NumShards int

	// RetryInitialBackoffMillis (flag retryInitialBackoffMillis, default 5000) is the wait before
	// the first retry of a failed INSERT, in milliseconds; each further retry doubles it, up to
	// RetryMaxBackoffMillis, with jitter. It must be positive.
	RetryInitialBackoffMillis int

	// RetryMaxBackoffMillis (flag retryMaxBackoffMillis, default 60000) caps the wait between two
	// attempts of an INSERT, in milliseconds. It must be at least RetryInitialBackoffMillis.
	RetryMaxBackoffMillis int

	// StopAfterIdle (flag stopAfterIdle, optional; unset = run forever) ends a run on the local
	// runner once no message has arrived for that many seconds and everything pulled has been
	// written, so that the pipeline drains and finishes. Ignored on Dataflow (drain the job
	// instead). When given it must be positive.
	StopAfterIdle OptionalInt

	// ProgressSeconds (flag progressSeconds, default 5) is how often a run on the local runner
	// logs a progress line (messages read, rows inserted, dead letters, messages not yet
	// acknowledged and how long ago the oldest of them was pulled), in seconds; 0 never. Ignored
	// on Dataflow, whose console shows the job's progress. It must not be negative.
	ProgressSeconds int

	// SchemaRefreshSeconds (flag schemaRefreshSeconds, default 60) is how often each worker reads
	// the table's schema again, in seconds, so that a column added while the job runs is filled
	// without a restart; 0 never (a dropped or changed column is still noticed at the next
	// failing INSERT). It must not be negative.
	SchemaRefreshSeconds int

	// MetadataColumns (flag metadataColumns, optional; "" = none) are the columns that take the
	// message's metadata instead of the payload's fields of their names: comma-separated
	// KEY=column pairs, KEY one of message_id, publish_time, ordering_key, attributes and
	// attribute.NAME (convert.ParseMetadataColumns; docs/conversion.md). Each column must exist
	// and take its value: checked at start-up against the table.
	MetadataColumns string

	// UnknownFieldsColumn (flag unknownFieldsColumn, optional; "" = none) is a String or
	// Map(String, String) column that takes the payload's fields that give the row no value, as
	// one JSON object of their keys and values as written. Not also a column of MetadataColumns.
	UnknownFieldsColumn string

	// JavascriptTextTransformGcsPath (flag javascriptTextTransformGcsPath, optional; "" = no UDF)
	// is the JavaScript file of the user-defined function that reshapes each message before it is
	// converted: gs://<bucket>/<object>, or a local path for local runs. Set it and
	// JavascriptTextTransformFunctionName, or neither.
	JavascriptTextTransformGcsPath string

	// JavascriptTextTransformFunctionName (flag javascriptTextTransformFunctionName, optional;
	// "" = no UDF) is the name of the global function of JavascriptTextTransformGcsPath to call,
	// a JavaScript identifier.
	JavascriptTextTransformFunctionName string

	// JavascriptTextTransformReloadIntervalMinutes (flag
	// javascriptTextTransformReloadIntervalMinutes, default 0 = never) is how often each worker
	// reads the UDF's file again, in minutes, so that a changed function takes effect without
	// restarting the job. It must not be negative.
	JavascriptTextTransformReloadIntervalMinutes int
}

// Defaults returns the parameters as they are before any flag is given: the
// default of every parameter that has one (maxInsertBlockSize 1000000 rows,
// maxRetries 5, insertDeduplicate true, insertDistributedSync true, numShards
// 0 = auto, retryInitialBackoffMillis 5000, retryMaxBackoffMillis 60000,
// schemaRefreshSeconds 60, javascriptTextTransformReloadIntervalMinutes 0, as
// the parameter table gives them); every other
// parameter empty or unset.
func Defaults() Options {
	var o Options
	for _, p := range parameters {
		switch p.kind {
		case kindInt:
			*p.field(&o).(*int) = p.def.(int)
		case kindBool:
			*p.field(&o).(*bool) = p.def.(bool)
		}
	}
	return o
}
