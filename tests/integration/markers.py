"""Line numbers of `# MARKER` comments in test programs."""


def marker_line(path, marker):
    with open(path) as f:
        for number, line in enumerate(f, start=1):
            if "# " + marker in line:
                return number
    raise AssertionError("marker %s not in %s" % (marker, path))
