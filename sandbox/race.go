//go:build race

package sandbox

// raceEnabled: the race detector's runtime maps huge shadow memory at start, which an address-space
// rlimit makes fail; under -race (tests) the heap watchdog alone bounds memory.
const raceEnabled = true
