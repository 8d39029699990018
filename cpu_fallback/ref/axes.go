package ref

import (
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
)

// normAxis maps a possibly negative axis into [0, rank), or returns an error
// naming the node.
func normAxis(n *graph.Node, axis int64, rank int) (int, error) {
	a := axis
	if a < 0 {
		a += int64(rank)
	}
	if a < 0 || a >= int64(rank) {
		return 0, n.Errorf("%w: axis %d is out of range for rank %d", driver.ErrInvalidArgument, axis, rank)
	}
	return int(a), nil
}

// normAxes normalises a list of axes against rank and rejects duplicates. It
// returns a mask of length rank marking the axes.
func normAxes(n *graph.Node, axes []int64, rank int) ([]bool, error) {
	mask := make([]bool, rank)
	for _, ax := range axes {
		a, err := normAxis(n, ax, rank)
		if err != nil {
			return nil, err
		}
		if mask[a] {
			return nil, n.Errorf("%w: axis %d is repeated in %v", driver.ErrInvalidArgument, ax, axes)
		}
		mask[a] = true
	}
	return mask, nil
}
