//go:build race

package udf

// raceDetector reports whether the tests run under the race detector (go test -race), whose
// runtime reserves shadow memory that the helper's address-space limit (helperMemoryBytes,
// RLIMIT_AS) does not leave room for: a helper that allocates near the limit ends with "fatal
// error: too many address space collisions for -race mode", not "out of memory".
const raceDetector = true
