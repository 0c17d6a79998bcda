// Package secret reads the values that the template keeps out of the job graph, named by a
// template parameter (clickHousePassword, clickHouseCaCertificate, clickHouseClientCertificate,
// clickHouseClientKey). The graph holds only the name; each worker reads the value in the Setup
// of its DoFns, and the launcher for its start-up checks. A name is one of:
//
//   - projects/<project>/secrets/<secret>/versions/<version|latest>: a Secret Manager secret
//     version, read with the client library (cloud.google.com/go/secretmanager) and Application
//     Default Credentials; the caller needs the permission secretmanager.versions.access
//     (roles/secretmanager.secretAccessor). Regional secrets (projects/<p>/locations/<l>/...)
//     are not supported.
//   - gs://<bucket>/<object>: a Cloud Storage object, read with the storage client, which
//     honours STORAGE_EMULATOR_HOST; the caller needs storage.objects.get
//     (roles/storage.objectViewer).
//   - anything else: a file path on the machine that reads it (on Dataflow, a worker, which does
//     not have the launcher's files).
//
// For tests only, SECRET_MANAGER_EMULATOR_HOST=host:port points the Secret Manager client at a
// local stand-in that speaks gRPC without TLS and takes no credentials (internal/gcptest). Google
// offers no Secret Manager emulator; nothing in production sets the variable.
//
// Errors are *Error: a sentence that names the secret, object or file and, for Google's APIs,
// the permission to grant. No error, and nothing this package logs, holds a value it read.
package secret

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// EmulatorEnv names the environment variable that points the Secret Manager client at a local
// stand-in, host:port, for tests. It is not for production: the stand-in takes no credentials.
const EmulatorEnv = "SECRET_MANAGER_EMULATOR_HOST"

// VersionForm is the form of a Secret Manager secret version name, for messages.
const VersionForm = "projects/<project>/secrets/<secret>/versions/<version|latest>"

// AccessPermission and AccessRole are what reading a Secret Manager secret version takes.
const (
	AccessPermission = "secretmanager.versions.access"
	AccessRole       = "roles/secretmanager.secretAccessor"
)

// maxBytes bounds what Read takes from an object or a file: certificates and keys are a few
// kilobytes, and a Secret Manager payload is at most 64 KiB.
const maxBytes = 1 << 20

// Secret Manager's rules for the parts of a name: a project ID or number, a secret ID of
// letters, digits, "-" and "_" (at most 255), a version number, "latest" or an alias.
var versionName = regexp.MustCompile(`^projects/[a-z0-9][-a-z0-9.:]*/secrets/[A-Za-z0-9_-]{1,255}/versions/[A-Za-z0-9_-]{1,63}$`)

// IsVersion reports whether s is a Secret Manager secret version name,
// projects/<project>/secrets/<secret>/versions/<version|latest>.
func IsVersion(s string) bool { return versionName.MatchString(s) }

// looksLikeSecretManager reports whether s is meant as a Secret Manager name, well formed or not.
func looksLikeSecretManager(s string) bool {
	return strings.HasPrefix(s, "projects/") && strings.Contains(s, "/secrets/")
}

// Kind is the kind of a name: what Read reads.
type Kind int

const (
	File    Kind = iota // a file path
	Object              // gs://<bucket>/<object>
	Version             // a Secret Manager secret version
)

// KindOf returns the kind of the name ref.
func KindOf(ref string) Kind {
	switch {
	case IsVersion(ref):
		return Version
	case strings.HasPrefix(ref, "gs://"):
		return Object
	}
	return File
}

// PasswordRule returns what is wrong with a clickHousePassword value, "" when nothing: a value
// meant as a Secret Manager name must be a secret version's; any other value is a password as
// it is. A secret version's name with spaces around it, or after a prefix (the API's full
// resource name, //secretmanager.googleapis.com/projects/...), is refused: it would otherwise be
// taken as the password itself, and fail only at ClickHouse, as a wrong password.
func PasswordRule(s string) string {
	trimmed := strings.TrimSpace(s)
	switch {
	case IsVersion(s):
		return ""
	case IsVersion(trimmed):
		return "is a Secret Manager secret version's name with spaces before or after it, which would be taken as the password itself: remove the spaces"
	}
	if i := strings.Index(trimmed, "projects/"); i > 0 && IsVersion(trimmed[i:]) {
		// What comes before the name is not quoted: were the value a password after all, it
		// would be part of it.
		return "is a Secret Manager secret version's name with text before it (as in the API's full resource name, //secretmanager.googleapis.com/projects/...), " +
			"which would be taken as the password itself: give " + VersionForm
	}
	if looksLikeSecretManager(s) {
		return notVersion
	}
	return ""
}

const notVersion = "looks like a Secret Manager name but is not a secret version's: give " + VersionForm +
	" (regional secrets, projects/<project>/locations/<location>/secrets/..., are not supported)"

// RefRule returns what is wrong with a name for Read, "" when nothing: a Secret Manager name
// must be a secret version's, a gs:// name needs a bucket and an object, and the value must
// not be the PEM text itself, nor its base64 body alone (KeyText), which the job graph would
// then hold.
func RefRule(ref string) string {
	switch {
	case strings.Contains(ref, "-----BEGIN"):
		return "holds PEM text; give the file path, gs:// object or Secret Manager secret version (" + VersionForm + ") that holds it"
	case KeyText(ref):
		return "holds what looks like a key's or a certificate's base64 text (a PEM body without its lines); give the file path, " +
			"gs:// object or Secret Manager secret version (" + VersionForm + ") that holds it"
	case strings.TrimSpace(ref) != ref:
		return "must not begin or end with spaces"
	case looksLikeSecretManager(ref) && !IsVersion(ref):
		return notVersion
	case strings.HasPrefix(ref, "gs://"):
		if b, o, _ := strings.Cut(strings.TrimPrefix(ref, "gs://"), "/"); b == "" || o == "" {
			return "must be gs://<bucket>/<object>, with an object name"
		}
	}
	return ""
}

// Error is a name that could not be read.
type Error struct {
	Name   string // the secret version, object or file
	Reason string // what went wrong and what to do, in a sentence that names Name
	Err    error  // the cause, from the client library or the file system
}

func (e *Error) Error() string { return e.Reason + " (" + e.Err.Error() + ")" }
func (e *Error) Unwrap() error { return e.Err }

// Read reads what ref names: a Secret Manager secret version (see Access), a Cloud Storage
// object or a file, of at most 1 MiB.
func Read(ctx context.Context, ref string) ([]byte, error) {
	switch KindOf(ref) {
	case Version:
		return Access(ctx, ref)
	case Object:
		return readObject(ctx, ref)
	}
	f, err := os.Open(ref)
	if err != nil {
		return nil, &Error{ref, fmt.Sprintf("cannot read the file %s: check the path (a file is read on the machine that runs the stage; on Dataflow give a gs:// object or a Secret Manager secret version instead)", ref), err}
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, &Error{ref, fmt.Sprintf("%s is a directory: give the file of the certificate or key (PEM) in it", ref), errors.New("is a directory")}
	}
	return readAll(ref, f)
}

func readAll(ref string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	switch {
	case err != nil:
		return nil, &Error{ref, "cannot read " + ref, err}
	case len(b) > maxBytes:
		return nil, &Error{ref, fmt.Sprintf("%s is larger than %d bytes: a certificate or a key is a few kilobytes", ref, maxBytes), errors.New("too large")}
	}
	return b, nil
}

// Access reads the payload of the Secret Manager secret version name
// (projects/<project>/secrets/<secret>/versions/<version|latest>) and checks its CRC32C when
// the API gives one. The errors name the secret version and the permission
// secretmanager.versions.access.
func Access(ctx context.Context, name string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	client, err := newClient(ctx)
	if err != nil {
		return nil, &Error{name, fmt.Sprintf("cannot open a Secret Manager client to read the secret version %s: check the credentials (Application Default Credentials; on Dataflow, the job's service account)", name), err}
	}
	defer client.Close()
	resp, err := client.AccessSecretVersion(ctx, &secretmanagerpb.AccessSecretVersionRequest{Name: name})
	if err != nil {
		return nil, accessError(name, err)
	}
	p := resp.GetPayload()
	if want := p.DataCrc32C; want != nil && int64(crc32.Checksum(p.GetData(), crc32.MakeTable(crc32.Castagnoli))) != *want {
		return nil, &Error{name, fmt.Sprintf("the payload of the secret version %s arrived corrupted (its CRC32C does not match): try again", name), errors.New("CRC32C mismatch")}
	}
	return p.GetData(), nil
}

// newClient opens a Secret Manager client: of the stand-in of EmulatorEnv when it is set,
// without TLS or credentials; else of Google's API with Application Default Credentials.
func newClient(ctx context.Context) (*secretmanager.Client, error) {
	if host := os.Getenv(EmulatorEnv); host != "" {
		return secretmanager.NewClient(ctx,
			option.WithEndpoint(host),
			option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	return secretmanager.NewClient(ctx)
}

// accessError explains a failed AccessSecretVersion.
func accessError(name string, err error) error {
	grant := fmt.Sprintf("the caller (on Dataflow, the job's service account) needs the permission %s on it: grant it %s on the secret", AccessPermission, AccessRole)
	var reason string
	code := status.Code(err)
	if errors.Is(err, context.DeadlineExceeded) {
		code = codes.DeadlineExceeded // the client library gives the context's error as it is
	}
	switch code {
	case codes.PermissionDenied:
		reason = fmt.Sprintf("cannot read the Secret Manager secret version %s: the permission %s is denied (or the secret does not exist); %s", name, AccessPermission, grant)
	case codes.NotFound:
		reason = fmt.Sprintf("the Secret Manager secret version %s does not exist: check the project, the secret and the version (a number, an alias or latest); %s", name, grant)
	case codes.FailedPrecondition:
		reason = fmt.Sprintf("the Secret Manager secret version %s is disabled or destroyed: enable it, or give another version; %s", name, grant)
	case codes.Unauthenticated:
		reason = fmt.Sprintf("cannot read the Secret Manager secret version %s: the request has no valid credentials (Application Default Credentials; on Dataflow, the job's service account, which needs %s)", name, AccessPermission)
	case codes.Unavailable, codes.DeadlineExceeded:
		reason = fmt.Sprintf("cannot reach Secret Manager to read the secret version %s (%s): check this machine's (on Dataflow, the workers') network route "+
			"to secretmanager.googleapis.com, such as Private Google Access on a subnetwork without external addresses, or a firewall", name, unreachable(err))
	default:
		reason = fmt.Sprintf("cannot read the Secret Manager secret version %s; %s", name, grant)
	}
	return &Error{name, reason, err}
}

// unreachable says what kept a request from its service: the deadline of a minute, or the network.
func unreachable(err error) string {
	if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
		return "no answer within a minute"
	}
	return "the service did not answer"
}

// isNetError reports whether err is a failure of the network (a dial, a reset, a name that does
// not resolve) rather than an answer of the service.
func isNetError(err error) bool {
	// Not net.Error: *url.Error has Timeout too, and wraps a credentials' or a certificate's
	// failure as well as the network's.
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns)
}

// readObject reads gs://<bucket>/<object>.
func readObject(ctx context.Context, ref string) ([]byte, error) {
	bucket, object, _ := strings.Cut(strings.TrimPrefix(ref, "gs://"), "/")
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// JSON reads (rather than the XML API's), which Google's API and the stand-in serve alike.
	client, err := storage.NewClient(ctx, storage.WithJSONReads())
	if err != nil {
		return nil, &Error{ref, fmt.Sprintf("cannot open a Cloud Storage client to read %s: check the credentials (Application Default Credentials; on Dataflow, the job's service account)", ref), err}
	}
	defer client.Close()
	r, err := client.Bucket(bucket).Object(object).NewReader(ctx)
	if err != nil {
		return nil, objectError(ref, err)
	}
	defer r.Close()
	return readAll(ref, r)
}

// objectError explains a failed read of a Cloud Storage object.
func objectError(ref string, err error) error {
	grant := "the caller (on Dataflow, the job's service account) needs the permission storage.objects.get on it: grant it roles/storage.objectViewer on the bucket"
	var gerr *googleapi.Error
	switch {
	case errors.Is(err, storage.ErrObjectNotExist), errors.Is(err, storage.ErrBucketNotExist):
		return &Error{ref, fmt.Sprintf("%s does not exist: check the bucket and the object name; %s", ref, grant), err}
	case errors.As(err, &gerr) && (gerr.Code == http.StatusForbidden || gerr.Code == http.StatusUnauthorized):
		return &Error{ref, fmt.Sprintf("cannot read %s: the permission storage.objects.get is denied; %s", ref, grant), err}
	case !errors.As(err, &gerr) && (errors.Is(err, context.DeadlineExceeded) || isNetError(err)):
		return &Error{ref, fmt.Sprintf("cannot reach Cloud Storage to read %s (%s): check this machine's (on Dataflow, the workers') network route "+
			"to storage.googleapis.com, such as Private Google Access on a subnetwork without external addresses, or a firewall", ref, unreachable(err)), err}
	}
	return &Error{ref, fmt.Sprintf("cannot read %s; %s", ref, grant), err}
}
