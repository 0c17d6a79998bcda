package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// TestMakeEmulator runs make emulator and make emulator-stop as the README has a user run them,
// on a free port: the emulator serves Pub/Sub once make emulator returns, make emulator-stop
// ends its process and frees the port, and make emulator then starts again on the same port
// (a second start of the emulator as `go run` left it failed with "address already in use").
func TestMakeEmulator(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	pidfile := filepath.Join(dir, fmt.Sprintf("emulator-%d.pid", port))
	host := fmt.Sprintf("127.0.0.1:%d", port)
	make := func(target string) string {
		t.Helper()
		cmd := exec.Command("make", "-s", "-C", "../..", target)
		cmd.Env = append(os.Environ(), "PUBSUB_EMULATOR_PORT="+strconv.Itoa(port), "EMULATOR_DIR="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", target, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		if _, err := os.Stat(pidfile); err == nil {
			make("emulator-stop")
		}
	})
	for round := 1; round <= 2; round++ {
		out := make("emulator")
		if !strings.Contains(out, "export PUBSUB_EMULATOR_HOST="+host+"\n") {
			t.Fatalf("round %d: make emulator printed no export line for %s:\n%s", round, host, out)
		}
		b, err := os.ReadFile(pidfile)
		if err != nil {
			t.Fatalf("round %d: the pid file: %v", round, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("round %d: the pid file holds %q", round, b)
		}
		createTopic(t, host, fmt.Sprintf("projects/my-project/topics/t%d", round))

		out = make("emulator-stop")
		if !strings.Contains(out, "emulator: stopped on port "+strconv.Itoa(port)) {
			t.Errorf("round %d: make emulator-stop printed:\n%s", round, out)
		}
		if err := syscall.Kill(pid, 0); err == nil {
			t.Fatalf("round %d: the emulator's process %d still runs after make emulator-stop", round, pid)
		}
		if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
			t.Errorf("round %d: the pid file is still there (%v)", round, err)
		}
		l, err := net.Listen("tcp", host)
		if err != nil {
			t.Fatalf("round %d: the port is still taken after make emulator-stop: %v", round, err)
		}
		l.Close()
	}
}

// createTopic creates topic on the emulator at host.
func createTopic(t *testing.T, host, topic string) {
	t.Helper()
	t.Setenv("PUBSUB_EMULATOR_HOST", host)
	ctx := context.Background()
	c, err := pubsub.NewClient(ctx, "my-project")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic}); err != nil {
		t.Fatalf("creating %s on the emulator: %v", topic, err)
	}
}
