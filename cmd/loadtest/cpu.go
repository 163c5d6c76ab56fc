package main

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on Linux for every architecture Go supports there).
const clockTicks = 100

// cpuMeter reads the CPU time spent by the server under test and, when it
// runs on this machine, by every PostgreSQL process, from /proc: on a few
// shared cores CPU seconds per unit of work are steadier figures than
// latencies.
type cpuMeter struct {
	serverPID int  // 0: unknown, not measured
	postgres  bool // sum every process named postgres
	// database, when set, counts only the backends connected to it (a
	// shared cluster's other work left out, and so are its background
	// processes: the WAL writer, the checkpointer, autovacuum).
	database string
}

// cpuSample is the CPU time used so far.
type cpuSample struct {
	At       time.Duration
	Server   time.Duration
	Postgres time.Duration
}

// newCPUMeter measures pid, or when pid is 0 and the server is on this
// machine, the process listening on the URL's port. It measures nothing
// on another machine or without /proc.
func newCPUMeter(rawURL string, pid int, postgres bool, database string) (*cpuMeter, error) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return nil, nil
	}
	m := &cpuMeter{serverPID: pid, postgres: postgres, database: database}
	if pid == 0 {
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, err
		}
		ips, err := net.LookupIP(u.Hostname())
		if err != nil || len(ips) == 0 || !ips[0].IsLoopback() {
			return nil, nil
		}
		port, err := strconv.Atoi(u.Port())
		if err != nil {
			port = 80
		}
		if m.serverPID, err = listenerPID(port); err != nil {
			return nil, fmt.Errorf("find the server's process: %w", err)
		}
	}
	return m, nil
}

// sample reads the CPU time used so far.
func (m *cpuMeter) sample() cpuSample {
	s := cpuSample{At: now()}
	if m == nil {
		return s
	}
	s.Server = processCPU(m.serverPID)
	if m.postgres {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			if comm, err := os.ReadFile(d + "/comm"); err == nil && strings.TrimSpace(string(comm)) == "postgres" && m.counts(d) {
				pid, _ := strconv.Atoi(filepath.Base(d))
				s.Postgres += processCPU(pid)
			}
		}
	}
	return s
}

// counts reports whether the PostgreSQL process at /proc dir d is one the
// meter sums: any, or with a database a backend of it (its title reads
// "postgres: <cluster>: <user> <database> <client> <state>").
func (m *cpuMeter) counts(d string) bool {
	if m.database == "" {
		return true
	}
	title, err := os.ReadFile(d + "/cmdline")
	if err != nil {
		return false
	}
	f := strings.Fields(strings.ReplaceAll(string(title), "\x00", " "))
	for i := 0; i+2 < len(f); i++ {
		if strings.HasSuffix(f[i], ":") && !strings.HasSuffix(f[i+1], ":") {
			return f[i+2] == m.database
		}
	}
	return false
}

// processCPU is the user and system time of pid, 0 when it cannot be read
// (the process ended).
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name in parentheses may hold spaces: fields count from
	// the last ')'. utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 13 {
		return 0
	}
	user, _ := strconv.ParseInt(fields[11], 10, 64)
	sys, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(user+sys) * time.Second / clockTicks
}

// listenerPID finds the process with a TCP socket listening on port, from
// /proc/net/tcp{,6} and the processes' file descriptors.
func listenerPID(port int) (int, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); ok && err == nil && int(p) == port {
				inodes[fields[9]] = true
			}
		}
		file.Close()
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("nothing listens on port %d here", port)
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		link, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			return strconv.Atoi(strings.Split(fd, "/")[2])
		}
	}
	return 0, fmt.Errorf("no process of this user holds the socket listening on port %d (give -server-pid)", port)
}

// CPUUse is the CPU the server and PostgreSQL spent in a measured span,
// in all and per unit of work.
type CPUUse struct {
	ServerSeconds   float64 `json:"serverSeconds"`
	PostgresSeconds float64 `json:"postgresSeconds" doc:"every local process named postgres; 0 when not measured"`
	Moves           int     `json:"moves"`
	Games           int     `json:"games" doc:"games completed in the span"`
	PerMoveMs       float64 `json:"perMoveMs" doc:"server + PostgreSQL CPU per accepted move"`
	PerGameMs       float64 `json:"perGameMs" doc:"server + PostgreSQL CPU per completed game (its start, moves and end)"`
	ServerPerGameMs float64 `json:"serverPerGameMs"`
	PgPerGameMs     float64 `json:"postgresPerGameMs"`
}

// cpuUse is what was spent between two samples, for moves and games done
// in between.
func cpuUse(from, to cpuSample, moves, games int) *CPUUse {
	u := &CPUUse{ServerSeconds: (to.Server - from.Server).Seconds(), PostgresSeconds: (to.Postgres - from.Postgres).Seconds(),
		Moves: moves, Games: games}
	total := (u.ServerSeconds + u.PostgresSeconds) * 1000
	if moves > 0 {
		u.PerMoveMs = total / float64(moves)
	}
	if games > 0 {
		u.PerGameMs = total / float64(games)
		u.ServerPerGameMs = u.ServerSeconds * 1000 / float64(games)
		u.PgPerGameMs = u.PostgresSeconds * 1000 / float64(games)
	}
	return u
}
