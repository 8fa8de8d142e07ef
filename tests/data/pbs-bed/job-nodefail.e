[mpiexec@p1] control_cb (pm/pmiserv/pmiserv_cb.c:206): assert (!closed) failed
[mpiexec@p1] HYDT_dmxu_poll_wait_for_event (tools/demux/demux_poll.c:76): callback returned error status
[mpiexec@p1] HYD_pmci_wait_for_completion (pm/pmiserv/pmiserv_pmci.c:160): error waiting for event
[mpiexec@p1] main (ui/mpich/mpiexec.c:325): process manager error waiting for completion
[proxy:0:2@p3] HYD_pmcd_pmip_control_cmd_cb (pm/pmiserv/pmip_cb.c:899): assert (!closed) failed
[proxy:0:2@p3] HYDT_dmxu_poll_wait_for_event (tools/demux/demux_poll.c:76): callback returned error status
[proxy:0:2@p3] main (pm/pmiserv/pmip.c:169): demux engine error waiting for event
