package chclient

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestLogLeftOut: the settings left out are logged once per process, whoever says it first
// (the launch, then a local run's write stage); none left out logs nothing.
func TestLogLeftOut(t *testing.T) {
	// The line is logged once per process: a run of this test before (-count=2) logged it.
	logged.Delete(fmt.Sprint("insert settings left out: the server does not know them", "settings", "async_insert, insert_quorum_parallel"))
	var out strings.Builder
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&out, nil)))
	LogLeftOut(nil)
	LogLeftOut([]string{"async_insert", "insert_quorum_parallel"})
	LogLeftOut([]string{"async_insert", "insert_quorum_parallel"})
	got := out.String()
	if n := strings.Count(got, `msg="insert settings left out: the server does not know them" settings="async_insert, insert_quorum_parallel"`); n != 1 || strings.Count(got, "\n") != 1 {
		t.Errorf("logged:\n%s\nwant the line once", got)
	}
}
