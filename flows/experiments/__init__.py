"""Named experiments shipped as YAML configs (as lm-evaluation-harness ships its tasks): each file
here is a benchmark config that ``topicbench paper`` (and ``topicbench run --experiment NAME``)
runs by its name, the file's stem."""
