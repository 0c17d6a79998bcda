package chclient

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Settings are the insert settings of the template (ClickHouse docs, "Settings"). They are sent
// with every INSERT, but only those the server knows: ClickHouse 18.16 rejects unknown settings.
type Settings struct {
	// Deduplicate is insert_deduplicate (insertDeduplicate), and deduplicate_insert (enable or
	// disable) on servers that have it (ClickHouse 26.2 and newer), where it overrides
	// insert_deduplicate and defaults to enable: insert_deduplicate=0 alone turns nothing off there.
	Deduplicate bool
	// Quorum is insert_quorum (insertQuorum), sent only when QuorumSet; 0 disables the quorum.
	Quorum    int
	QuorumSet bool
	// DistributedSync is insert_distributed_sync (insertDistributedSync).
	DistributedSync bool
	// MaxInsertBlockSize is max_insert_block_size (maxInsertBlockSize), in rows; it also bounds the
	// rows of each INSERT the pipeline sends.
	MaxInsertBlockSize int
}

// waitForAsyncInsert is sent with every INSERT to servers that know it (ClickHouse 21.11 and
// newer): an INSERT the server queues (async_insert, on by default from ClickHouse 26.2) is
// answered once the queue is flushed into the table, not once it is queued, whatever the user's
// profile says, so that a success still means the rows are stored before their messages are
// acknowledged.
const waitForAsyncInsert = "wait_for_async_insert"

// TokenSetting is the per-INSERT deduplication token (ClickHouse 22.2 and newer).
const TokenSetting = "insert_deduplication_token"

// wanted returns the settings to send, before filtering by what the server knows.
func (s Settings) wanted() clickhouse.Settings {
	m := clickhouse.Settings{
		"insert_deduplicate":      boolSetting(s.Deduplicate),
		"deduplicate_insert":      "disable",
		"insert_distributed_sync": boolSetting(s.DistributedSync),
		"max_insert_block_size":   s.MaxInsertBlockSize,
		waitForAsyncInsert:        1,
	}
	if s.Deduplicate {
		m["deduplicate_insert"] = "enable"
	}
	if s.QuorumSet {
		m["insert_quorum"] = s.Quorum
	}
	return m
}

// insertSettingSources are the settings Settings.wanted and InsertSettings send with every
// INSERT, each with where its value comes from and what a user who wants it should do. A
// clickHouseUrl option of one of these names would be overridden at every INSERT without a
// word, so the URL's rules refuse it (queryRule) with this text.
var insertSettingSources = map[string]string{
	"insert_deduplicate":      "from the parameter insertDeduplicate: give it there",
	"deduplicate_insert":      "from the parameter insertDeduplicate: give it there",
	"insert_distributed_sync": "from the parameter insertDistributedSync: give it there",
	// distributed_foreground_insert: insert_distributed_sync's name in newer releases,
	// which keeps the old one as an alias.
	"distributed_foreground_insert": "as insert_distributed_sync, from the parameter insertDistributedSync: give it there",
	"max_insert_block_size":         "from the parameter maxInsertBlockSize: give it there",
	"insert_quorum":                 "when the parameter insertQuorum is set: give it there",
	waitForAsyncInsert:              "as 1, so that a success means the rows are stored: remove it",
	TokenSetting:                    "derived from the INSERT's messages: remove it",
}

func boolSetting(b bool) int {
	if b {
		return 1
	}
	return 0
}

// knownSettings reads which of names the server knows from system.settings. It returns the known
// ones and the left-out ones, sorted.
func knownSettings(ctx context.Context, conn driver.Conn, names []string) (known map[string]bool, leftOut []string, err error) {
	rows, err := conn.Query(ctx, "SELECT name FROM system.settings WHERE has(?, name)", names)
	if err != nil {
		return nil, nil, fmt.Errorf("reading system.settings: %w", err)
	}
	defer rows.Close()
	known = map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, nil, fmt.Errorf("reading system.settings: %w", err)
		}
		known[n] = true
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading system.settings: %w", err)
	}
	for _, n := range names {
		if !known[n] {
			leftOut = append(leftOut, n)
		}
	}
	sort.Strings(leftOut)
	return known, leftOut, nil
}

// LogOnce logs each distinct message once per process, so that every worker thread's Setup does
// not repeat it, and reports whether it logged it now. Each distinct message is kept for the
// life of the process: give it a bounded number of them.
func LogOnce(msg string, args ...any) bool {
	key := fmt.Sprint(append([]any{msg}, args...)...)
	if _, dup := logged.LoadOrStore(key, true); !dup {
		slog.Info(msg, args...)
		return true
	}
	return false
}

// LogLeftOut logs, once per process (LogOnce), the insert settings ResolveSettings left out,
// if any: the launch and, in the same process or on each worker, the write stage say it once.
func LogLeftOut(leftOut []string) {
	if len(leftOut) > 0 {
		LogOnce("insert settings left out: the server does not know them", "settings", strings.Join(leftOut, ", "))
	}
}

// ResolveSettings returns the settings to send to the server behind conn (without the
// per-INSERT token), whether it takes insert_deduplication_token, and the names left out.
func ResolveSettings(ctx context.Context, conn driver.Conn, s Settings) (send clickhouse.Settings, token bool, leftOut []string, err error) {
	want := s.wanted()
	names := []string{TokenSetting}
	for n := range want {
		names = append(names, n)
	}
	known, leftOut, err := knownSettings(ctx, conn, names)
	if err != nil {
		return nil, false, nil, err
	}
	send = clickhouse.Settings{}
	for n, v := range want {
		if known[n] {
			send[n] = v
		}
	}
	return send, known[TokenSetting], leftOut, nil
}

var logged sync.Map
