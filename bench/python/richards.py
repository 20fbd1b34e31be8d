# Are We Fast Yet "Richards": an operating-system task scheduler simulation (idle
# task, worker, two handlers, two devices passing packets); a run ends with 23246
# packets queued and 9297 holds. Packets and task control blocks are objects that
# link to each other (None: no packet, no task); each task runs its kind's method.
import sys

IDLER, WORKER, HANDLER_A, HANDLER_B, DEVICE_A, DEVICE_B = 1, 2, 3, 4, 5, 6
DEVICE_PACKET, WORK_PACKET = 0, 1


class Packet:
    __slots__ = ("link", "id", "kind", "datum", "data")

    def __init__(self, link, id, kind):
        self.link = link
        self.id = id
        self.kind = kind
        self.datum = 1
        self.data = [0, 0, 0, 0]


def append(packet, head):
    packet.link = None
    if head is None:
        return packet
    mouse = head
    link = mouse.link
    while link is not None:
        mouse = link
        link = mouse.link
    mouse.link = packet
    return head


class Task:
    def __init__(self, sched, link, id, priority, work, state):
        self.sched = sched
        self.link = link
        self.id = id
        self.priority = priority
        self.input = work
        self.pending = state == "waiting_with_packet"
        self.waiting = state != "running"
        self.holding = False

    def run_task(self):
        packet = None
        if self.pending and self.waiting and not self.holding:
            packet = self.input
            self.input = packet.link
            self.pending = self.input is not None
            self.waiting = False
            self.holding = False
        return self.run(packet)


class DeviceTask(Task):
    def __init__(self, *args):
        super().__init__(*args)
        self.device_pending = None

    def run(self, packet):
        s = self.sched
        if packet is None:
            packet = self.device_pending
            if packet is None:
                return s.wait()
            self.device_pending = None
            return s.queue_packet(packet)
        self.device_pending = packet
        return s.hold_self()


class HandlerTask(Task):
    def __init__(self, *args):
        super().__init__(*args)
        self.work_in = None
        self.device_in = None

    def run(self, packet):
        s = self.sched
        if packet is not None:
            if packet.kind == WORK_PACKET:
                self.work_in = append(packet, self.work_in)
            else:
                self.device_in = append(packet, self.device_in)
        wp = self.work_in
        if wp is None:
            return s.wait()
        count = wp.datum
        if count > 4:
            self.work_in = wp.link
            return s.queue_packet(wp)
        dp = self.device_in
        if dp is None:
            return s.wait()
        self.device_in = dp.link
        dp.datum = wp.data[count - 1]
        wp.datum = count + 1
        return s.queue_packet(dp)


class IdleTask(Task):
    def __init__(self, *args):
        super().__init__(*args)
        self.control = 1
        self.count = 10000

    def run(self, packet):
        s = self.sched
        self.count -= 1
        if self.count == 0:
            return s.hold_self()
        if self.control % 2 == 0:
            self.control //= 2
            return s.release(DEVICE_A)
        self.control = ((self.control - 1) // 2) ^ 53256
        return s.release(DEVICE_B)


class WorkerTask(Task):
    def __init__(self, *args):
        super().__init__(*args)
        self.destination = HANDLER_A
        self.count = 0

    def run(self, packet):
        s = self.sched
        if packet is None:
            return s.wait()
        self.destination = HANDLER_B if self.destination == HANDLER_A else HANDLER_A
        packet.id = self.destination
        packet.datum = 1
        for i in range(4):
            self.count += 1
            if self.count > 26:
                self.count = 1
            packet.data[i] = 65 + self.count - 1
        return s.queue_packet(packet)


class Scheduler:
    def __init__(self):
        self.task_list = None
        self.current = None
        self.current_id = 0
        self.tasks = [None] * 7
        self.queue_count = 0
        self.hold_count = 0

    def create(self, cls, id, priority, work, state):
        t = cls(self, self.task_list, id, priority, work, state)
        self.task_list = t
        self.tasks[id] = t

    def wait(self):
        self.current.waiting = True
        return self.current

    def hold_self(self):
        self.hold_count += 1
        self.current.holding = True
        return self.current.link

    def release(self, id):
        t = self.tasks[id]
        t.holding = False
        if t.priority > self.current.priority:
            return t
        return self.current

    def queue_packet(self, packet):
        t = self.tasks[packet.id]
        self.queue_count += 1
        packet.link = None
        packet.id = self.current_id
        if t.input is None:
            t.input = packet
            t.pending = True
            if t.priority > self.current.priority:
                return t
        else:
            t.input = append(packet, t.input)
        return self.current

    def schedule(self):
        self.current = self.task_list
        while self.current is not None:
            c = self.current
            if c.holding or (not c.pending and c.waiting):
                self.current = c.link
            else:
                self.current_id = c.id
                self.current = c.run_task()

    def start(self):
        self.create(IdleTask, IDLER, 0, None, "running")
        q = Packet(None, WORKER, WORK_PACKET)
        q = Packet(q, WORKER, WORK_PACKET)
        self.create(WorkerTask, WORKER, 1000, q, "waiting_with_packet")
        q = Packet(None, DEVICE_A, DEVICE_PACKET)
        q = Packet(q, DEVICE_A, DEVICE_PACKET)
        q = Packet(q, DEVICE_A, DEVICE_PACKET)
        self.create(HandlerTask, HANDLER_A, 2000, q, "waiting_with_packet")
        q = Packet(None, DEVICE_B, DEVICE_PACKET)
        q = Packet(q, DEVICE_B, DEVICE_PACKET)
        q = Packet(q, DEVICE_B, DEVICE_PACKET)
        self.create(HandlerTask, HANDLER_B, 3000, q, "waiting_with_packet")
        self.create(DeviceTask, DEVICE_A, 4000, None, "waiting")
        self.create(DeviceTask, DEVICE_B, 5000, None, "waiting")
        self.schedule()
        return "%d %d" % (self.queue_count, self.hold_count)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    result = ""
    for _ in range(n):
        result = Scheduler().start()
    print(result)


main()
