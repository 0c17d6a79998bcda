// The parameter table, first part: where the messages come from and where their rows go, the
// subscription and the ClickHouse connection (see params.go).

package pipeline

import (
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/chclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/psclient"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// endpointParameters are the subscription's and the ClickHouse connection's parameters, in the
// order of the fields of Options.
var endpointParameters = []parameter{
	{
		name: "inputSubscription", group: "Source", need: required, kind: kindString,
		field: func(o *Options) any { return &o.InputSubscription },
		usage: "Pub/Sub `subscription` to read JSON messages from, as projects/<project>/subscriptions/<name>.",
		rule:  pubsubName(psclient.ParseSubscription),
		label: "Pub/Sub input subscription",
		help: "Pub/Sub subscription to read JSON messages from, in the form projects/<project>/subscriptions/<name>. Each message must hold one JSON " +
			"object whose field names are the target table's column names. For example, projects/my-project/subscriptions/events-sub.",
		typ:   "PUBSUB_SUBSCRIPTION",
		regex: `^projects/([1-9][0-9]{0,18}|([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+:)?[a-z][-a-z0-9]{4,28}[a-z0-9])/subscriptions/([a-fh-zA-Z][-a-zA-Z0-9_.~+%]{2,254}|g([-a-np-zA-Z0-9_.~+%][-a-zA-Z0-9_.~+%]{1,253}|o([-a-np-zA-Z0-9_.~+%][-a-zA-Z0-9_.~+%]{0,252}|o([-a-fh-zA-Z0-9_.~+%][-a-zA-Z0-9_.~+%]{0,251})?)))$`,
		doc: "Pub/Sub subscription to read from, `projects/<project>/subscriptions/<name>`, for example " +
			"`projects/my-project/subscriptions/events-sub`. Each message must hold one JSON object whose field names are the table's column names " +
			"([conversion.md](conversion.md)). The project ID follows Google Cloud's rules (6 to 30 lowercase letters, digits and hyphens, or " +
			"`example.com:my-project`); the subscription ID is 3 to 255 letters, digits and `- _ . ~ + %`, starting with a letter and not with " +
			"`goog`.",
	},
	{
		name: "clickHouseUrl", group: "Target", need: required, kind: kindURL,
		field: func(o *Options) any { return &o.ClickHouseURL },
		usage: "ClickHouse server `URL`: http://host:8123, https://host:8443 (ClickHouse Cloud) or clickhouse://host:9000 (native protocol). " +
			"A password in it is never printed.",
		rule: func(_ parameter, o Options) string {
			return chclient.URLRule(o.ClickHouseURL, o.ClickHouseUsername, o.ClickHousePassword, o.ClickHouseDatabase, ClickHouseParam)
		},
		label: "ClickHouse URL",
		help: "ClickHouse server: https://host:8443 (HTTPS, as on ClickHouse Cloud), http://host:8123 (HTTP) or clickhouse://host:9000 (native " +
			"protocol). Without a port these default to 8443, 8123 and 9000. Several hosts may be given, separated by commas " +
			"(clickhouse://ch1:9000,ch2:9000). clickhouse-go options may follow as a query (secure=true for TLS on the native protocol, " +
			"compress=lz4, dial_timeout=5s); an option the pipeline cannot honour is refused by name. A user, password or database in the URL must " +
			"agree with clickHouseUsername, clickHousePassword and clickHouseDatabase. The server must be reachable from the launcher VM and the " +
			"workers. For example, https://abc123.us-central1.gcp.clickhouse.cloud:8443.",
		regex: `^([hH][tT][tT][pP][sS]?|[cC][lL][iI][cC][kK][hH][oO][uU][sS][eE])://([^/?#]*@)?([^/?#@,: \[\]]+|\[[0-9a-fA-F:.]+\])(:[0-9]{1,5})?(,([^/?#@,: \[\]]+|\[[0-9a-fA-F:.]+\])(:[0-9]{1,5})?)*([/?#](.*[^ ])?)?$`,
		doc: "The ClickHouse server. `https://host:8443`: HTTP over TLS, with the server's certificate verified (ClickHouse Cloud). " +
			"`http://host:8123`: HTTP, unencrypted. `clickhouse://host:9000`: the native protocol, unencrypted (needed for servers older than 21.x). " +
			"Without a port these default to 8443, 8123 and 9000. The scheme may be in any case. Several hosts may be given, separated by commas " +
			"(`clickhouse://ch1:9000,ch2:9000`, IPv6 as `[fd00::5]:9000`); they are tried in order. The URL is read by clickhouse-go's own DSN " +
			"parser, and every part of it is honoured or refused with a sentence naming it, never dropped: a user, password or database in the URL " +
			"(`user:pw@`, `/db`, `?username=`, `?password=`, `?database=`) must agree with `clickHouseUsername`, `clickHousePassword` and " +
			"`clickHouseDatabase` (a password given only in the URL is used); the options `secure` (TLS on the native protocol: " +
			"`clickhouse://host:9440?secure=true`, verified as `https://` is, see `clickHouseCaCertificate`), `tls_server_name` (the name to verify " +
			"the server's certificate against, instead of each host's), `compress` (`lz4`, `zstd`, `true` = lz4, `none`, and on `http://`/`https://` " +
			"also `gzip`, `deflate`, `br`; see also `clickHouseCompression`), `compress_level`, `dial_timeout`, `read_timeout` (Go durations such as " +
			"`10s`), `max_open_conns`, `max_idle_conns`, `conn_max_lifetime` (1ms or more), `connection_open_strategy`, `block_buffer_size`, " +
			"`max_compression_buffer`, `hosts`, `alt_hosts`, `http_proxy`, `http_path` and `client_info_product` act as clickhouse-go documents " +
			"them; `skip_verify` (certificate verification off) and `debug` are refused, and so are the settings the pipeline sends with every " +
			"INSERT in place of the URL's, naming the parameter that sets them (`insert_deduplicate` and `deduplicate_insert`: `insertDeduplicate`; " +
			"`insert_distributed_sync` and `distributed_foreground_insert`: `insertDistributedSync`; `max_insert_block_size`: `maxInsertBlockSize`; " +
			"`insert_quorum`: `insertQuorum`; `wait_for_async_insert`, always 1, and `insert_deduplication_token`, derived from the messages); " +
			"any other query option is a ClickHouse setting sent with " +
			"every query (a misspelt one is refused by the server at start-up; on the native protocol clickhouse-go sends only numeric and boolean " +
			"settings, so a text setting such as `load_balancing=random` fails at the first query with \"unsupported data type\"). Each option is " +
			"given once, options are separated by `&` (a `;` is refused), a fragment (`#...`) is refused, and the values of `compress`, " +
			"`connection_open_strategy`, the timeouts and the pool sizes are checked, because the driver would silently ignore a value it does not " +
			"know; `http_path` and `http_proxy` are refused on `clickhouse://`, which ignores them. Without options the pipeline dials for 10 s, " +
			"waits 5 min (`read_timeout`) for the answer to a query and for the server to take each MiB of what it sends (a server, or a proxy in " +
			"front of it, that stops reading in the middle of an INSERT's data fails the attempt once that time has passed without progress, and " +
			"the INSERT is retried; until 2026-12-08 it waited without end), and keeps 4 connections per worker. A password in the URL is never printed. JDBC URLs (`jdbc:clickhouse://...`) and " +
			"`tcp://` are refused with a message that says which forms to use. On `http://` and `https://` a redirect (301, 302, 303, 307, 308, " +
			"which ClickHouse never sends; a proxy or load balancer in front of it may) is not followed, since the password would go with the " +
			"request to the host it names: the request fails, and is retried, with an error naming the status and where it pointed.",
	},
	{
		name: "clickHouseDatabase", group: "Target", need: required, kind: kindString,
		field: func(o *Options) any { return &o.ClickHouseDatabase },
		usage: "ClickHouse `database` of clickHouseTable and clickHouseDeadLetterTable.",
		rule:  plainName("must be a database name without a dot"),
		label: "ClickHouse database",
		help:  "Database that holds clickHouseTable and clickHouseDeadLetterTable. For example, default.",
		regex: "^ *[^.` ][^.`]*$",
		doc:   "Database of `clickHouseTable` and `clickHouseDeadLetterTable`, for example `analytics`. No dot, no backtick.",
	},
	{
		name: "clickHouseTable", group: "Target", need: required, kind: kindString,
		field: func(o *Options) any { return &o.ClickHouseTable },
		usage: "ClickHouse `table` to insert rows into, a bare name without \"<database>.\".",
		rule: func(p parameter, o Options) string {
			if why := tableRule(p.str(o), "must be a bare table name without a dot: for <database>.<table>, put the database in clickHouseDatabase"); why != "" {
				return why
			}
			// Rows are written into clickHouseTable unless routing sends unlisted values to the dead letter.
			written := o.RouteBy == "" || o.RouteUnlisted != "deadLetter"
			if written && o.ClickHouseDeadLetterTable != "" && p.str(o) == o.ClickHouseDeadLetterTable {
				return "is also clickHouseDeadLetterTable, which holds dead letters, not rows: name another table for one of them"
			}
			return ""
		},
		label: "ClickHouse table",
		help: "Table to insert rows into: a bare table name, without the database (which goes in clickHouseDatabase). The table must exist; its " +
			"columns decide how each JSON field is converted. For example, events.",
		regex: "^ *[^.` ][^.`]*$",
		doc: "Table to insert rows into, a bare name such as `events` (not `analytics.events`: a dot is refused, put the database in " +
			"`clickHouseDatabase`). It must exist; its columns decide how each field is converted, and a column of a type the pipeline cannot " +
			"convert stops the launch, naming the column. `MATERIALIZED` and `ALIAS` columns are never written; an `EPHEMERAL` one takes its field " +
			"(for the `DEFAULT`s that read it), unless its type has no converter. Not " +
			"`clickHouseDeadLetterTable` (unless `routeUnlisted=deadLetter` leaves it unwritten): rows there would pass for dead letters.",
	},
	{
		name: "clickHouseUsername", group: "Target", need: required, kind: kindString,
		field: func(o *Options) any { return &o.ClickHouseUsername },
		usage: "ClickHouse `user` name.",
		label: "ClickHouse user",
		help: "ClickHouse user to connect as. It needs INSERT on clickHouseTable and on clickHouseDeadLetterTable when that is set. For example, " +
			"default.",
		regex: `^ *[^ ].*$`,
		doc:   "ClickHouse user. It needs `INSERT` on the target table and on the dead-letter table ([deploy.md](deploy.md#the-clickhouse-user)).",
	},
	{
		// Optional, not required: the console will not submit an empty required field, and a user
		// without a password (ClickHouse's default user) gives an empty one.
		name: "clickHousePassword", group: "Target", need: optional, kind: kindSecret,
		field: func(o *Options) any { return &o.ClickHousePassword },
		usage: "ClickHouse `password` of clickHouseUsername, or better the Secret Manager secret version that holds it, " + secret.VersionForm +
			", which keeps it out of the job graph; a password is never printed.",
		unset: "empty for a user without a password (ClickHouse's default user)",
		rule:  func(p parameter, o Options) string { return secret.PasswordRule(p.str(o)) },
		label: "ClickHouse password, or its Secret Manager secret version",
		help: "Password of clickHouseUsername, or better the Secret Manager secret version that holds it, " +
			"projects/<project>/secrets/<secret>/versions/<version|latest>: the job graph then holds only that name, and the launcher and each " +
			"worker read the password from Secret Manager (the job's service account needs roles/secretmanager.secretAccessor on the secret, for the " +
			"permission secretmanager.versions.access). A password given as text works too, and is never printed, but it travels with the job graph " +
			"and the staged files, and the launcher warns about it. Optional: leave it empty for a user without a password. For example, " +
			"projects/my-project/secrets/clickhouse-password/versions/latest.",
		note: "no password",
		doc: "Password of `clickHouseUsername`, or, better, the Secret Manager secret version that holds it, " +
			"`projects/<project>/secrets/<secret>/versions/<version\\|latest>` (for example " +
			"`projects/my-project/secrets/clickhouse-password/versions/latest`). With a secret version, the job graph, the staged files and the " +
			"job's pipeline options hold only that name: the launcher reads the password for its start-up checks and each worker reads it in the " +
			"`Setup` of its stages, and again each time the server refuses it (codes 193 `WRONG_PASSWORD`, 194, 516 `AUTHENTICATION_FAILED`), so that " +
			"a password rotated while the job runs (a new version that `versions/latest` names, then the user's new password on the server) reaches " +
			"the next attempt of the refused INSERT without a restart, with the Secret Manager client library and the job's service account, which needs the permission " +
			"`secretmanager.versions.access` (`roles/secretmanager.secretAccessor` on the secret); a single trailing newline (`\\n` or `\\r\\n`) of the secret's payload " +
			"is dropped. A secret that cannot be read stops the launch with a sentence that names it and the permission. A value that looks like a " +
			"Secret Manager name but is not a global secret version's (`projects/p/secrets/s`, a regional `projects/p/locations/l/secrets/...`) is " +
			"refused, and so is a secret version's name with spaces around it or text before it (the full resource name " +
			"`//secretmanager.googleapis.com/projects/...`); any other value is the password itself; unset or empty is no password (ClickHouse's default user has none). Over `https://` the password cannot hold a " +
			"line break or another control character (a tab passes): clickhouse-go sends it there in an HTTP header, and the start-up stops saying so; " +
			"`http://` and the native protocol (`clickhouse://host:9440?secure=true` over TLS) take it. The pipeline never " +
			"prints a password (logs, errors and the job's pipeline options show `xxxxx`), but a password given as text travels with the job graph " +
			"([deploy.md](deploy.md#the-password-in-secret-manager)), and the launcher warns about it. With a secret version, `clickHouseUrl` must " +
			"hold no password. The Flex Template metadata has no password type (Google's own templates declare their password parameters as plain " +
			"text too), so the console shows it as a text field.",
	},
	{
		name: "clickHouseCaCertificate", group: "Target", kind: kindRef,
		field: func(o *Options) any { return &o.ClickHouseCaCertificate },
		usage: "PEM `certificate` of the authority that signs the ClickHouse server's certificate, for TLS URLs only (https://, clickhouse://...?secure=true): " +
			"gs://<bucket>/<object>, a Secret Manager secret version " + secret.VersionForm + ", or, for local runs only, a file path.",
		unset: "the server is verified against the system's roots",
		rule:  tlsRef("", nil),
		label: "ClickHouse CA certificate",
		help: "PEM certificate of the authority that signs the ClickHouse server's certificate, for a clickHouseUrl with TLS (https://, or " +
			"clickhouse://host:9440?secure=true): a gs://<bucket>/<object>, a Secret Manager secret version " +
			"projects/<project>/secrets/<secret>/versions/<version|latest>, or, for local runs only, a file path. Leave it empty to verify the " +
			"server against the system's roots (ClickHouse Cloud). The server's certificate is always verified, and its name checked against the " +
			"host of clickHouseUrl. For example, gs://my-bucket/clickhouse/ca.pem.",
		regex: `^([^ -].*[^ ]|[^ -])?$`,
		doc: "The PEM certificate(s) of the authority that signs the server's certificate, for a `clickHouseUrl` with TLS (`https://`, or " +
			"`clickhouse://host:9440?secure=true`; with a plain URL it is refused): a `gs://<bucket>/<object>` (read with the Cloud Storage client, " +
			"`storage.objects.get`), a Secret Manager secret version (as for `clickHousePassword`), or a file path (local runs only: on Dataflow a " +
			"file path is refused, since each worker reads it and workers do not have the launcher's files). Unset: the server is verified against " +
			"the system's roots, as for ClickHouse Cloud. Given: against these certificates only; each worker reads them in the `Setup` of its " +
			"stages, and again each time the server's certificate is not signed by them (the server's certificate replaced by one of another " +
			"authority while the job runs: replace what this names too, and the next attempt uses it). The server's certificate is always verified, and " +
			"its name checked against each host of `clickHouseUrl` (or `tls_server_name`); there is no way to turn this off (`skip_verify` is " +
			"refused). PEM text itself in place of a name is refused, and so is its base64 body alone (64 characters or more of base64, " +
			"capitals, small letters and digits among them, starting as a DER body, a whole PEM file in base64 or an OpenSSH key does: " +
			"`M`, `LS0tLS1CRUdJTi`, `b3BlbnNzaC1rZXktdjE`), which is shown as `xxxxx`.",
	},
	{
		name: "clickHouseClientCertificate", group: "Target", kind: kindRef,
		field: func(o *Options) any { return &o.ClickHouseClientCertificate },
		usage: "PEM client `certificate` presented to a ClickHouse server that asks for one (mutual TLS), in the forms of clickHouseCaCertificate, with clickHouseClientKey.",
		rule:  tlsRef("clickHouseClientKey", func(o Options) string { return o.ClickHouseClientKey }),
		label: "ClickHouse client certificate (mutual TLS)",
		help: "PEM client certificate that the pipeline presents to a ClickHouse server that asks for one (mutual TLS), in the forms of " +
			"clickHouseCaCertificate; give clickHouseClientKey with it. For example, gs://my-bucket/clickhouse/client.pem.",
		regex: `^([^ -].*[^ ]|[^ -])?$`,
		doc: "PEM client certificate presented to a server that asks for one (mutual TLS: ClickHouse's `openSSL.server.verificationMode` `strict` or " +
			"`relaxed`), in the forms of `clickHouseCaCertificate`, for a `clickHouseUrl` with TLS. Give `clickHouseClientKey` with it. A " +
			"certificate outside its validity period is refused at start-up. Over `https://` without `clickHousePassword`, the certificate also " +
			"authenticates the user (clickhouse-go sends `X-ClickHouse-SSL-Certificate-Auth: on`: a user `IDENTIFIED WITH ssl_certificate`); " +
			"without a certificate, a user without a password is authenticated by its empty password, as over `http://`.",
	},
	{
		name: "clickHouseClientKey", group: "Target", kind: kindRef,
		field: func(o *Options) any { return &o.ClickHouseClientKey },
		usage: "PEM private `key` of clickHouseClientCertificate, in the forms of clickHouseCaCertificate (a Secret Manager secret version keeps it out of the files of the job).",
		rule:  tlsRef("clickHouseClientCertificate", func(o Options) string { return o.ClickHouseClientCertificate }),
		label: "ClickHouse client key (mutual TLS)",
		help: "PEM private key of clickHouseClientCertificate, in the forms of clickHouseCaCertificate; a Secret Manager secret version keeps it out " +
			"of files. For example, projects/my-project/secrets/clickhouse-client-key/versions/latest.",
		regex: `^([^ -].*[^ ]|[^ -])?$`,
		doc: "PEM private key of `clickHouseClientCertificate` (PKCS #8, or an RSA or EC key), in the same forms; a Secret Manager secret version " +
			"keeps it out of files. Give `clickHouseClientCertificate` with it; a key that does not match the certificate is refused at start-up, " +
			"naming this parameter.",
	},
	{
		name: "clickHouseCompression", group: "Target", kind: kindString,
		field: func(o *Options) any { return &o.ClickHouseCompression },
		usage: "How the blocks sent to ClickHouse are compressed, on both protocols: `lz4`, zstd or none.",
		unset: "then it is clickHouseUrl's compress option, or lz4 when the URL has none",
		rule: func(p parameter, o Options) string {
			return chclient.CompressionRule(o.ClickHouseURL, p.str(o), ClickHouseParam)
		},
		label: "Compression of the inserts",
		help: "How the blocks sent to ClickHouse are compressed, on both protocols: lz4, zstd or none. Unset, it is clickHouseUrl's compress option, " +
			"or lz4 when the URL has none. For example, zstd.",
		typ: "ENUM",
		enum: []EnumOption{
			{Value: "lz4", Label: "LZ4", Description: "Fast, the usual choice."},
			{Value: "zstd", Label: "ZSTD", Description: "Smaller blocks for more CPU."},
			{Value: "none", Label: "None", Description: "No compression."},
		},
		regex: `^(lz4|zstd|none)?$`,
		note:  "lz4",
		doc: "How the blocks of every INSERT (and of the schema and dead-letter queries) are compressed on the wire, on both protocols: `lz4` (fast; " +
			"see docs/operations.md for the bytes saved on the demo events), `zstd` (smaller, more CPU), or `none`. Unset, it is `clickHouseUrl`'s " +
			"`compress` option, or `lz4` when the URL has none; a value that disagrees with the URL's `compress` option (`compress=true` is `lz4`, " +
			"`compress=false` is `none`) is refused at start-up. ClickHouse decompresses what it receives; the data stored is the same.",
	},
}
