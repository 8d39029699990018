package names

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnique(t *testing.T) {
	var s Set
	assert.Equal(t, "a", s.Unique("a"))
	assert.Equal(t, "a_1", s.Unique("a"))
	assert.Equal(t, "a_2", s.Unique("a"))
	assert.Equal(t, "a_1_1", s.Unique("a_1"))
	assert.True(t, s.Taken("a_2"))
	assert.False(t, s.Taken("b"))
}
