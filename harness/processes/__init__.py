"""Starting and ending processes: the run's zygote and runner template, the runners' parent and own sides, helper processes."""
