package types

import (
	"fmt"
	"time"

	"github.com/tideline-dev/tideline/pkg/chaindata"
)

// PriorityLevel is the seed's scheduling level, numbered as the seed numbers
// it: the larger, the more urgent. Temporal numbers the other way round;
// PriorityLevel.PriorityKey is the only place that translates.
type PriorityLevel int

// PriorityKey maps the seed's levels (5 = most urgent) onto Temporal's
// PriorityKey (1 = most urgent, 5 = least). This is the only translation:
// pkg/temporal takes the key as a plain int.
func (p PriorityLevel) PriorityKey() int {
	p = max(UltraLow, min(p, UltraHigh))
	return int(UltraHigh) + 1 - int(p)
}

// The seed's five levels.
const (
	UltraLow  PriorityLevel = 1 // older than 72 h
	Low       PriorityLevel = 2 // 48–72 h old
	Medium    PriorityLevel = 3 // 24–48 h old
	High      PriorityLevel = 4 // younger than 24 h
	UltraHigh PriorityLevel = 5 // live blocks scheduled by HeadScan
)

// Levels lists the backlog levels in the order the scheduler serves them.
var Levels = []PriorityLevel{High, Medium, Low, UltraLow}

func (p PriorityLevel) String() string {
	switch p {
	case UltraLow:
		return "ultra_low"
	case Low:
		return "low"
	case Medium:
		return "medium"
	case High:
		return "high"
	case UltraHigh:
		return "ultra_high"
	}
	return fmt.Sprintf("level(%d)", int(p))
}

// The age boundaries of the backlog levels.
const (
	HighMaxAge   = 24 * time.Hour
	MediumMaxAge = 48 * time.Hour
	LowMaxAge    = 72 * time.Hour
)

// LevelForAge gives the backlog level of a height, from its age: its distance
// below head times the nominal block time. A height at or above head is the
// youngest possible backlog (High); live scheduling uses UltraHigh directly.
func LevelForAge(head, height uint64, blockTime time.Duration) PriorityLevel {
	if height >= head {
		return High
	}
	age := time.Duration(head-height) * blockTime
	switch {
	case age < HighMaxAge:
		return High
	case age < MediumMaxAge:
		return Medium
	case age < LowMaxAge:
		return Low
	default:
		return UltraLow
	}
}

// MinHeightForLevel returns the lowest height (>= floor) that still has the
// given level or a more urgent one, so a range splits into level buckets by
// arithmetic rather than per-height work.
func MinHeightForLevel(head, floor uint64, blockTime time.Duration, level PriorityLevel) uint64 {
	var maxAge time.Duration
	switch level {
	case High:
		maxAge = HighMaxAge
	case Medium:
		maxAge = MediumMaxAge
	case Low:
		maxAge = LowMaxAge
	default:
		return floor
	}
	// Heights with (head-h)*blockTime < maxAge, i.e. head-h <= (maxAge-1ns)/blockTime.
	maxDist := uint64((maxAge - 1) / blockTime)
	if head < floor || head-floor <= maxDist {
		return floor
	}
	return head - maxDist
}

// LevelSpans splits [floor, head] into the levels' contiguous spans, newest
// first: High is on top, UltraLow at the bottom. A level with no heights is
// left out.
func LevelSpans(head, floor uint64, blockTime time.Duration) []LevelSpan {
	var out []LevelSpan
	top := head
	for _, lvl := range Levels {
		lo := MinHeightForLevel(head, floor, blockTime, lvl)
		if lo > top || (len(out) > 0 && out[len(out)-1].Range.From == floor) {
			continue
		}
		out = append(out, LevelSpan{Level: lvl, Range: chaindata.HeightRange{From: lo, To: top}})
		if lo == floor {
			break
		}
		top = lo - 1
	}
	return out
}

// LevelSpan is the heights of one level.
type LevelSpan struct {
	Level PriorityLevel
	Range chaindata.HeightRange
}
