//go:build !race

package udf

// raceDetector reports whether the tests run under the race detector (race_test.go).
const raceDetector = false
