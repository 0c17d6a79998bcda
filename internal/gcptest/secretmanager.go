package gcptest

import (
	"context"
	"hash/crc32"
	"net"
	"sync"
	"testing"

	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/secret"
)

// SecretManager is a stand-in of the Secret Manager API: a gRPC server on loopback that
// implements the client library's own server interface (secretmanagerpb.
// SecretManagerServiceServer), of which it serves AccessSecretVersion: the payload of each
// secret version it was given (with its CRC32C, as the API sends it), PermissionDenied for the
// names it was told to deny, and NotFound for any other name, each in the API's words. Every
// other method answers Unimplemented. It takes no credentials and speaks gRPC without TLS.
//
// A process finds it through SECRET_MANAGER_EMULATOR_HOST=Host() (see package
// transforms/secret).
type SecretManager struct {
	secretmanagerpb.UnimplementedSecretManagerServiceServer

	addr string

	mu       sync.Mutex
	versions map[string][]byte
	denied   map[string]bool
	accesses []string
}

// StartSecretManager starts a Secret Manager stand-in, points SECRET_MANAGER_EMULATOR_HOST at
// it for the rest of the test (a pipeline's DoFns run in the test's process on prism), and
// stops it when the test ends.
func StartSecretManager(t testing.TB) *SecretManager {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SecretManager{addr: l.Addr().String(), versions: map[string][]byte{}, denied: map[string]bool{}}
	g := grpc.NewServer()
	secretmanagerpb.RegisterSecretManagerServiceServer(g, s)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	t.Setenv(secret.EmulatorEnv, s.addr)
	return s
}

// Host returns host:port, the value for SECRET_MANAGER_EMULATOR_HOST.
func (s *SecretManager) Host() string { return s.addr }

// Env returns the environment entry that points a process at this server.
func (s *SecretManager) Env() string { return secret.EmulatorEnv + "=" + s.addr }

// Add makes the secret version name (projects/<p>/secrets/<s>/versions/<v>, "latest" included)
// hold data.
func (s *SecretManager) Add(name string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.versions[name] = append([]byte(nil), data...)
}

// Deny makes every access to the secret version name fail with PermissionDenied, as the API
// answers a caller without secretmanager.versions.access.
func (s *SecretManager) Deny(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[name] = true
}

// Accesses returns the names of the AccessSecretVersion requests received so far, in order.
func (s *SecretManager) Accesses() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.accesses...)
}

// AccessSecretVersion serves a secret version's payload.
func (s *SecretManager) AccessSecretVersion(_ context.Context, req *secretmanagerpb.AccessSecretVersionRequest) (*secretmanagerpb.AccessSecretVersionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := req.GetName()
	s.accesses = append(s.accesses, name)
	if s.denied[name] {
		return nil, status.Errorf(codes.PermissionDenied, "Permission 'secretmanager.versions.access' denied for resource '%s' (or it may not exist).", name)
	}
	data, ok := s.versions[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Secret Version [%s] not found.", name)
	}
	sum := int64(crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	return &secretmanagerpb.AccessSecretVersionResponse{
		Name:    name,
		Payload: &secretmanagerpb.SecretPayload{Data: append([]byte(nil), data...), DataCrc32C: &sum},
	}, nil
}
