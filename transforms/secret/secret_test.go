package secret_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ch-beam/pubsub-to-clickhouse/internal/gcptest"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

const (
	version = "projects/p/secrets/ch-password/versions/latest"
	denied  = "projects/p/secrets/other/versions/3"
	missing = "projects/p/secrets/gone/versions/1"
	payload = "Secret-Payload-7f3e" // must never appear in an error
)

// TestAccess reads a secret version from the stand-in with the client library, and explains the
// versions it denies or lacks by name and permission, without the payload.
func TestAccess(t *testing.T) {
	sm := gcptest.StartSecretManager(t)
	sm.Add(version, []byte(payload))
	sm.Deny(denied)
	ctx := context.Background()

	got, err := secret.Access(ctx, version)
	if err != nil || string(got) != payload {
		t.Fatalf("Access(%s) = %q, %v; want the payload", version, got, err)
	}
	for name, want := range map[string][]string{
		denied:  {denied, "the permission secretmanager.versions.access is denied", "roles/secretmanager.secretAccessor", "PermissionDenied"},
		missing: {missing, "does not exist", "secretmanager.versions.access", "NotFound"},
	} {
		_, err := secret.Access(ctx, name)
		var se *secret.Error
		if !errors.As(err, &se) || se.Name != name {
			t.Errorf("Access(%s): %v, want a *secret.Error naming it", name, err)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Access(%s): %q lacks %q", name, err, w)
			}
		}
	}
	// The map above is read in any order.
	if got, want := strings.Join(slices.Sorted(slices.Values(sm.Accesses())), " "), strings.Join(slices.Sorted(slices.Values([]string{version, denied, missing})), " "); got != want {
		t.Errorf("the stand-in saw %s, want %s", got, want)
	}
}

// TestUnreachable: a Secret Manager or Cloud Storage that does not answer (nothing listens where
// the client is pointed) is said to be out of reach, not a permission to grant.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	t.Setenv(secret.EmulatorEnv, addr)
	t.Setenv("STORAGE_EMULATOR_HOST", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for ref, want := range map[string]string{
		version:            "cannot reach Secret Manager to read the secret version " + version,
		"gs://certs/a.pem": "cannot reach Cloud Storage to read gs://certs/a.pem",
	} {
		_, err := secret.Read(ctx, ref)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "grant it") {
			t.Errorf("Read(%s): %v, want %q and no grant", ref, err, want)
		}
	}
}

// TestRead reads each kind of name: a file, a Cloud Storage object (from the stand-in, through
// STORAGE_EMULATOR_HOST) and a secret version; a missing one is explained.
func TestRead(t *testing.T) {
	sm := gcptest.StartSecretManager(t)
	sm.Add(version, []byte("from secret manager"))
	gcs := gcptest.StartGCS(t, "certs")
	t.Setenv("STORAGE_EMULATOR_HOST", gcs.Host())
	gcs.Put("certs", "ca/ca.pem", []byte("from cloud storage"))
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for ref, want := range map[string]string{
		version:                "from secret manager",
		"gs://certs/ca/ca.pem": "from cloud storage",
		file:                   "from a file",
	} {
		got, err := secret.Read(ctx, ref)
		if err != nil || string(got) != want {
			t.Errorf("Read(%s) = %q, %v; want %q", ref, got, err, want)
		}
	}
	for ref, want := range map[string]string{
		"gs://certs/ca/none.pem":          "gs://certs/ca/none.pem does not exist",
		"gs://nobucket/ca.pem":            "storage.objects.get",
		file + ".missing":                 "cannot read the file " + file + ".missing",
		filepath.Dir(file):                filepath.Dir(file) + " is a directory: give the file of the certificate or key (PEM) in it",
		"projects/p/secrets/x/versions/1": "secretmanager.versions.access",
	} {
		_, err := secret.Read(ctx, ref)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%s): %v, want %q", ref, err, want)
		}
	}
}

func TestRules(t *testing.T) {
	for _, tc := range []struct {
		value         string
		version       bool
		kind          secret.Kind
		password, ref string // the rules' complaints, "" for none
	}{
		{"projects/p/secrets/s/versions/latest", true, secret.Version, "", ""},
		{"projects/my-project-1/secrets/ch_pw-2/versions/12", true, secret.Version, "", ""},
		{"projects/123456789/secrets/s/versions/an-alias", true, secret.Version, "", ""},
		{"projects/p/secrets/s", false, secret.File, "not a secret version's", "not a secret version's"},
		{"projects/p/locations/eu/secrets/s/versions/1", false, secret.File, "regional secrets", "regional secrets"},
		{"a plain password", false, secret.File, "", ""},
		// A secret version's name that would otherwise be taken as the password itself.
		{" projects/p/secrets/s/versions/1", false, secret.File, "with spaces before or after it", "spaces"},
		{"projects/p/secrets/s/versions/1 ", false, secret.File, "with spaces before or after it", "spaces"},
		{"//secretmanager.googleapis.com/projects/p/secrets/s/versions/1", false, secret.File, "with text before it", ""},
		{"S3cret-pw-e7projects/p/secrets/s/versions/1", false, secret.File, "with text before it", ""},
		{"a password with projects/ in it", false, secret.File, "", ""},
		{"gs://bucket/ca.pem", false, secret.Object, "", ""},
		{"gs://bucket/", false, secret.Object, "", "with an object name"},
		{"gs:///ca.pem", false, secret.Object, "", "with an object name"},
		{"/etc/ssl/ca.pem", false, secret.File, "", ""},
		{"-----BEGIN CERTIFICATE-----\nMIIB...", false, secret.File, "", "holds PEM text"},
		{" /etc/ca.pem", false, secret.File, "", "spaces"},
		// A PEM body without its lines, on one line or several: the key itself.
		{base64Key, false, secret.File, "", "base64 text"},
		{base64Key[:64] + "\n" + base64Key[64:], false, secret.File, "", "base64 text"},
		// Names as long, of the same letters.
		{"projects/myproject123/secrets/ClickHouseClientKeyForProduction/versions/latest", true, secret.Version, "", ""},
		{"keys/clickhouse/production/client/key/for/the/ingestion/pipeline/v2", false, secret.File, "", ""},
		{"/etc/ssl/private/ClickHouseClientKeyForTheIngestionPipeline2026v2", false, secret.File, "", ""},
		{"keys/ClickHouse/Production2026/ClientKeyForTheIngestionPipelineTeam", false, secret.File, "", ""},
		{"MyKeys/ClickHouse/Production2026/ClientKeyForTheIngestionPipelineTeam", false, secret.File, "", "base64 text"}, // as a key's body begins
		{base64Key[:64] + `\n` + base64Key[64:], false, secret.File, "", "base64 text"},
		{base64Key[:64] + `\r\n` + base64Key[64:] + `\r\n`, false, secret.File, "", "base64 text"},
		{`"` + base64Key + `"`, false, secret.File, "", "base64 text"},
		{`'` + base64Key + `'`, false, secret.File, "", "base64 text"},
	} {
		if got := secret.IsVersion(tc.value); got != tc.version {
			t.Errorf("IsVersion(%q) = %v", tc.value, got)
		}
		if got := secret.KindOf(tc.value); got != tc.kind {
			t.Errorf("KindOf(%q) = %v, want %v", tc.value, got, tc.kind)
		}
		for _, r := range []struct {
			name      string
			got, want string
		}{{"PasswordRule", secret.PasswordRule(tc.value), tc.password}, {"RefRule", secret.RefRule(tc.value), tc.ref}} {
			if (r.want == "") != (r.got == "") || !strings.Contains(r.got, r.want) {
				t.Errorf("%s(%q) = %q, want %q", r.name, tc.value, r.got, r.want)
			}
		}
	}
}

// base64Key is the start of a private key's PEM body (PKCS #8, RSA), as pasted without its
// BEGIN and END lines.
const base64Key = "MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQC7VJTUt9Us8cKjMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvuNMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ"
