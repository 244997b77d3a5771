-- A non-Go file: a link's fragment is searched as plain text.
local algorithms = {}
algorithms.gcra = function() end
