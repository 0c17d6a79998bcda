package gcptest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Token is the access token that every service account of this package is given.
const Token = "test-token"

// ServiceAccountEmail is the client_email of the key files this package writes.
const ServiceAccountEmail = "launcher@p.iam.gserviceaccount.com"

// Account is a service-account key file and the local token endpoint it names.
type Account struct {
	File  string // the key file, for GOOGLE_APPLICATION_CREDENTIALS
	Email string

	srv *httptest.Server
	key *rsa.PrivateKey

	mu     sync.Mutex
	grants []Grant
}

// Grant is one token request that the endpoint received.
type Grant struct {
	GrantType string
	// Claims are the claims of the JWT assertion (iss, scope, aud, iat, exp), when it was one
	// signed by the account's key.
	Claims map[string]any
	// Err says why the grant was refused, "" when the token was given.
	Err string
}

// ServiceAccount writes a service-account key file into dir and returns its path. Its
// token_uri is a local endpoint that answers the JWT-bearer grant of golang.org/x/oauth2 (what
// google.DefaultClient does with GOOGLE_APPLICATION_CREDENTIALS) with the access token Token.
func ServiceAccount(t testing.TB, dir string) (credentialsFile string) {
	t.Helper()
	return StartServiceAccount(t, dir).File
}

// StartServiceAccount is ServiceAccount, and gives the token requests received.
func StartServiceAccount(t testing.TB, dir string) *Account {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	a := &Account{Email: ServiceAccountEmail, key: key}
	a.srv = httptest.NewServer(http.HandlerFunc(a.token))
	t.Cleanup(a.srv.Close)

	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := map[string]string{
		"type":                        "service_account",
		"project_id":                  "p",
		"private_key_id":              "0123456789abcdef0123456789abcdef01234567",
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                a.Email,
		"client_id":                   "100000000000000000001",
		"auth_uri":                    a.srv.URL + "/auth",
		"token_uri":                   a.TokenURI(),
		"auth_provider_x509_cert_url": a.srv.URL + "/certs",
		"universe_domain":             "googleapis.com",
	}
	b, err := json.MarshalIndent(keyFile, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	a.File = filepath.Join(dir, "service-account.json")
	if err := os.WriteFile(a.File, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

// TokenURI returns the key file's token_uri.
func (a *Account) TokenURI() string { return a.srv.URL + "/token" }

// Grants returns the token requests received so far.
func (a *Account) Grants() []Grant {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Grant(nil), a.grants...)
}

// token answers POST /token: grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer with an
// RS256 assertion signed by the account's key, issued by its email, for this endpoint.
func (a *Account) token(w http.ResponseWriter, r *http.Request) {
	g := Grant{}
	defer func() {
		a.mu.Lock()
		a.grants = append(a.grants, g)
		a.mu.Unlock()
	}()
	if r.Method != http.MethodPost || r.URL.Path != "/token" {
		g.Err = fmt.Sprintf("%s %s: only POST /token is served", r.Method, r.URL.Path)
		tokenError(w, http.StatusNotFound, g.Err)
		return
	}
	if err := r.ParseForm(); err != nil {
		g.Err = err.Error()
		tokenError(w, http.StatusBadRequest, g.Err)
		return
	}
	g.GrantType = r.PostForm.Get("grant_type")
	if g.GrantType != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		g.Err = fmt.Sprintf("unsupported grant_type %q", g.GrantType)
		tokenError(w, http.StatusBadRequest, g.Err)
		return
	}
	claims, err := a.verify(r.PostForm.Get("assertion"))
	g.Claims = claims
	if err != nil {
		g.Err = err.Error()
		tokenError(w, http.StatusBadRequest, g.Err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": Token, "token_type": "Bearer", "expires_in": 3600})
}

// verify checks the JWT's RS256 signature against the account's key, and its iss and aud.
func (a *Account) verify(jwt string) (map[string]any, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("the assertion is not a JWT")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if err := decodeSegment(parts[0], &header); err != nil {
		return nil, fmt.Errorf("the JWT's header: %w", err)
	}
	claims := map[string]any{}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return nil, fmt.Errorf("the JWT's claims: %w", err)
	}
	if header.Alg != "RS256" {
		return claims, fmt.Errorf("the JWT is signed with %q, want RS256", header.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return claims, fmt.Errorf("the JWT's signature: %w", err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&a.key.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return claims, fmt.Errorf("the JWT is not signed by the account's key: %w", err)
	}
	if claims["iss"] != a.Email {
		return claims, fmt.Errorf("the JWT's iss is %v, want %s", claims["iss"], a.Email)
	}
	if claims["aud"] != a.TokenURI() {
		return claims, fmt.Errorf("the JWT's aud is %v, want %s", claims["aud"], a.TokenURI())
	}
	return claims, nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(seg, "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func tokenError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": msg})
}
